#!/bin/sh
# Judge the HIP fixture: the HIP runtime aborts the process on a device assert
# by design, so "pass" is SIGABRT with the assertion line on stderr, or the
# fixture itself reporting 710/719 (exit 0). 77 = skip (no usable GPU).
bin=$1
err=$(mktemp) || exit 1
"$bin" 2>"$err"
rc=$?
cat "$err" >&2
if [ "$rc" -eq 134 ] || [ "$rc" -eq $((128 + 6)) ]; then
  if grep -q "Device-side assertion" "$err"; then
    echo "PASS: SIGABRT with the device-side assertion on stderr"
    rm -f "$err"; exit 0
  fi
  echo "FAIL: SIGABRT without a device-side assertion line"
  rm -f "$err"; exit 1
fi
rm -f "$err"
exit "$rc"
