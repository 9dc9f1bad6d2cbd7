// synattn — the values distance and bucket blocks use for cells that are not
// word pairs (docs/math.md §2–§3).
#ifndef SYNATTN_SPECIAL_VALUES_HPP
#define SYNATTN_SPECIAL_VALUES_HPP

namespace synattn {

constexpr int kPaddingDistance = -1;  // not a word: the pair is masked
constexpr int kSpecialDistance = -2;  // special token ([CLS], <s>): the extra bucket
constexpr int kPaddingBucket = -1;    // masked in attention

}  // namespace synattn

#endif  // SYNATTN_SPECIAL_VALUES_HPP
