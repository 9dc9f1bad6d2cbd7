// synattn — which layer filled a cache, so that backward() can refuse one it
// did not fill, or one it has already used.
//
// Every layer with a cache holds a LayerIdentity: a number unique to the
// object, new for a copy and for an assignment (the parameters are then
// other values), and carried by a move (they are the same values). forward()
// stamps the cache with it; backward() checks the stamp before it writes any
// gradient, so a cache from another model, even one of the same shape, or
// from a forward pass that never completed, is a clear error, and a second
// backward() on one cache (which would add the same gradients twice) is
// refused. Shapes follow: a layer's shape cannot change without a new
// identity.
#ifndef SYNATTN_UTIL_LAYER_IDENTITY_HPP
#define SYNATTN_UTIL_LAYER_IDENTITY_HPP

#include <atomic>
#include <cstdint>
#include <string>

#include "../error.hpp"

namespace synattn {

class LayerIdentity {
 public:
  LayerIdentity() noexcept : id_(next()) {}
  LayerIdentity(const LayerIdentity&) noexcept : id_(next()) {}
  LayerIdentity(LayerIdentity&& other) noexcept : id_(other.id_) { other.id_ = next(); }
  LayerIdentity& operator=(const LayerIdentity&) noexcept {
    id_ = next();
    return *this;
  }
  LayerIdentity& operator=(LayerIdentity&& other) noexcept {
    if (this != &other) {
      id_ = other.id_;
      other.id_ = next();
    }
    return *this;
  }

  std::uint64_t value() const noexcept { return id_; }

 private:
  // 64 bits: a billion new layers a second would wrap after 584 years.
  static std::uint64_t next() noexcept {
    static std::atomic<std::uint64_t> counter{0};
    return counter.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  std::uint64_t id_;
};

// Held by a cache: the identity of the layer whose forward() filled it, and
// whether a backward() has used it since.
class CacheStamp {
 public:
  // First thing in forward(): until the pass completes (and calls stamp), the
  // cache belongs to nobody, so one left half-filled by an error is refused.
  void clear() noexcept {
    owner_ = 0;
    used_ = false;
  }
  // Last thing in forward().
  void stamp(const LayerIdentity& owner) noexcept {
    owner_ = owner.value();
    used_ = false;
  }
  bool used() const noexcept { return used_; }

  // In backward(), before any gradient is written: throws unless `owner`
  // filled this cache and no backward() has used it since.
  void check(const char* fn, const LayerIdentity& owner) const {
    check_filled(fn, owner);
    if (used_)
      throw Error(std::string(fn) +
                  ": backward() has already run on this cache; run forward() again (a second backward would add "
                  "the same gradients twice)");
  }
  // Throws unless `owner` filled this cache (used or not: a loss may be read
  // again after backward()).
  void check_filled(const char* fn, const LayerIdentity& owner) const {
    if (owner_ == 0)
      throw Error(std::string(fn) + ": the cache holds no forward pass (call forward() with it first)");
    if (owner_ != owner.value())
      throw Error(std::string(fn) +
                  ": the cache was filled by another layer or model (or by this one before it was copied or "
                  "assigned); run forward() on this one with it first");
  }
  // After the rest of backward()'s checks, before its first write.
  void mark_used() noexcept { used_ = true; }

 private:
  std::uint64_t owner_ = 0;  // 0: not filled (identities start at 1)
  bool used_ = false;
};

}  // namespace synattn

#endif  // SYNATTN_UTIL_LAYER_IDENTITY_HPP
