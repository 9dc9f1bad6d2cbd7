# strip_measured_keys(<var>): removes from the JSON lines in <var> the keys a
# run measures rather than computes (times, rates, waits, memory), which
# differ between two runs by nature; every other key must not.
function(strip_measured_keys var)
  string(REGEX REPLACE
    "\"(train_seconds|train_tokens_per_second|dev_tokens_per_second|teacher_dev_tokens_per_second|reduce_wait_seconds|peak_resident_mb)\":[^,}]*" "" json "${${var}}")
  set(${var} "${json}" PARENT_SCOPE)
endfunction()
