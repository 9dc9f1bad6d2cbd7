// synattn — parameter groups: per-group learning-rate multipliers and
// weight-decay overrides, chosen by a predicate on ParameterInfo.
//
// The experiment trains the syntax bias (tables and strengths) at 10x the
// model's rate: those few numbers get one gradient contribution per bucket,
// summed over all heads and pairs, yet have to move a long way from zero.
// Groups are matched in order and the first match wins; a parameter no group
// selects uses multiplier 1 and the optimiser's own weight decay.
#ifndef SYNATTN_TRAIN_PARAMETER_GROUPS_HPP
#define SYNATTN_TRAIN_PARAMETER_GROUPS_HPP

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../util/parameters.hpp"

namespace synattn {

using ParameterPredicate = std::function<bool(const ParameterInfo&)>;

// Predicates on names. A suffix ".table" matches "layers.0.attention.table";
// name_is_or_ends_with("table") also matches a bare "table" (the attention
// layer's own names have no prefix). They take string_views so that matching
// every parameter at every optimiser step allocates nothing.
inline bool ends_with(std::string_view s, std::string_view suffix) noexcept {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
inline bool starts_with(std::string_view s, std::string_view prefix) noexcept {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}
inline ParameterPredicate name_ends_with(std::string suffix) {
  return [suffix = std::move(suffix)](const ParameterInfo& p) { return ends_with(p.name, suffix); };
}
inline ParameterPredicate name_starts_with(std::string prefix) {
  return [prefix = std::move(prefix)](const ParameterInfo& p) { return starts_with(p.name, prefix); };
}
// `last` is the name itself or its last dotted component ("scale" matches
// "scale" and "layers.1.attention.scale", not "rescale").
inline bool name_is_or_ends_with(std::string_view name, std::string_view last) noexcept {
  return name == last ||
         (name.size() > last.size() && ends_with(name, last) && name[name.size() - last.size() - 1] == '.');
}

// The syntax bias: tables, strengths and tree-fusion view weights
// ("table", "*.table", "scale", "*.scale", "view_logits", "*.view_logits")
// and anything under "bias." (a table shared by all layers).
inline bool is_syntax_bias_parameter(const ParameterInfo& p) {
  return name_is_or_ends_with(p.name, "table") || name_is_or_ends_with(p.name, "scale") ||
         name_is_or_ends_with(p.name, "view_logits") || starts_with(p.name, "bias.");
}

struct ParameterGroup {
  std::string name;                  // for messages and checkpoint metadata
  ParameterPredicate selects;        // which parameters belong to the group
  double lr_multiplier = 1.0;        // the group's rate is lr * lr_multiplier
  std::optional<double> weight_decay;  // overrides the optimiser's when set
};

class ParameterGroups {
 public:
  ParameterGroups() = default;
  explicit ParameterGroups(std::vector<ParameterGroup> groups) {
    for (auto& g : groups) add(std::move(g));
  }

  // Appends a group (matched after the existing ones).
  ParameterGroups& add(ParameterGroup group) {
    const std::string where = "ParameterGroups::add: group '" + group.name + "' ";
    if (!group.selects) throw Error(where + "has no predicate (selects is empty)");
    if (!(group.lr_multiplier >= 0) || !std::isfinite(group.lr_multiplier))
      throw Error(where + "lr_multiplier must be finite and >= 0, got " + std::to_string(group.lr_multiplier));
    if (group.weight_decay && (!(*group.weight_decay >= 0) || !std::isfinite(*group.weight_decay)))
      throw Error(where + "weight_decay must be finite and >= 0, got " + std::to_string(*group.weight_decay));
    groups_.push_back(std::move(group));
    return *this;
  }

  std::size_t size() const noexcept { return groups_.size(); }
  const ParameterGroup& operator[](std::size_t i) const { return groups_[i]; }

  // Index of the first group selecting `p`, or -1 (the default group).
  int group_of(const ParameterInfo& p) const {
    for (std::size_t i = 0; i < groups_.size(); ++i)
      if (groups_[i].selects(p)) return static_cast<int>(i);
    return -1;
  }
  double lr_multiplier(const ParameterInfo& p) const {
    const int g = group_of(p);
    return g < 0 ? 1.0 : groups_[static_cast<std::size_t>(g)].lr_multiplier;
  }
  double weight_decay(const ParameterInfo& p, double fallback) const {
    const int g = group_of(p);
    if (g < 0) return fallback;
    const auto& wd = groups_[static_cast<std::size_t>(g)].weight_decay;
    return wd ? *wd : fallback;
  }

 private:
  std::vector<ParameterGroup> groups_;
};

// The experiment's grouping: the syntax bias (is_syntax_bias_parameter) at
// `lr_multiplier` times the model's rate, without weight decay by default
// (decay would pull the strength back to zero, which is what the experiment
// measures against); everything else in the default group.
inline ParameterGroups syntax_bias_groups(double lr_multiplier = 10.0,
                                          std::optional<double> weight_decay = 0.0) {
  ParameterGroups groups;
  groups.add(ParameterGroup{"syntax_bias", is_syntax_bias_parameter, lr_multiplier, weight_decay});
  return groups;
}

}  // namespace synattn

#endif  // SYNATTN_TRAIN_PARAMETER_GROUPS_HPP
