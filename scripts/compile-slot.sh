#!/usr/bin/env bash
# CUDA compiler launcher for shared developer machines: when /tmp/fastinfer-compile-slots holds a
# number N, at most N nvcc processes of all fastinfer builds on this machine run at once (each
# CUTLASS translation unit needs ~3 GB); otherwise the compiler runs directly.
slots_file=/tmp/fastinfer-compile-slots
[[ -r $slots_file ]] || exec "$@"
slots=$(cat "$slots_file" 2>/dev/null)
[[ $slots =~ ^[0-9]+$ && $slots -gt 0 ]] || exec "$@"
while true; do
  for ((i = 0; i < slots; i++)); do
    exec {fd}>"/tmp/fastinfer-compile-slot.$i"
    if flock -n "$fd"; then
      "$@"
      rc=$?
      flock -u "$fd"
      exit $rc
    fi
    exec {fd}>&-
  done
  sleep 1
done
