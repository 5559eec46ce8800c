#!/usr/bin/env bash
# Check that every setting of kernel configuration fragments survived into a .config
# (after `make olddefconfig`, which silently drops what its dependencies do not allow).
#
#   images/kernel/verify-config.sh CONFIG FRAGMENT...
#
# A fragment's `CONFIG_X=v` must stand as is in CONFIG; a module request (=m) is also met
# by a built-in (=y); `# CONFIG_X is not set` must not be set; `#require CONFIG_X=v` lines
# check symbols that nobody sets directly (selected by others). Prints one FAIL line per
# setting that did not hold, and `ok` with the count; exits 1 on any failure.
# Used by check.sh and build-deb.sh.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: verify-config.sh CONFIG FRAGMENT..." >&2; exit 2; }
config=$1
shift
missing=0
count=0
for fragment in "$@"; do
  while IFS= read -r line; do
    case "$line" in
      "#require "*) want=${line#\#require } ;;
      "# CONFIG_"*" is not set") sym=${line#\# }; sym=${sym%% *}
        count=$((count + 1))
        if grep -q "^$sym=" "$config"; then echo "FAIL  config: $sym is set, wanted off"; missing=1; fi
        continue ;;
      CONFIG_*) want=$line ;;
      *) continue ;;
    esac
    count=$((count + 1))
    sym=${want%%=*}
    got=$(grep "^$sym=" "$config" || true)
    if [ "$got" = "$want" ] || { [ "${want#*=}" = m ] && [ "$got" = "$sym=y" ]; }; then
      continue
    fi
    echo "FAIL  config: wanted $want ($(basename "$fragment")), got ${got:-unset}"
    missing=1
  done < "$fragment"
done
[ "$missing" = 0 ] || exit 1
echo "ok    $count settings of $(for f in "$@"; do basename "$f"; done | paste -sd, -) hold after olddefconfig"
