#!/bin/sh
# tests/core/check_rooms.sh — the core's rooms depend in one direction only:
#   base <- graph <- plugin <- compile <- exec <- data <- io <- dist <- host
# A source or header of a room may include headers of its own room and of
# the rooms below it, never one of a room above (core/local.mk). Fails
# naming every include that points up, and every core source outside the
# rooms. The libraries under lib/ are kept off the core by their include
# path (the public headers only).
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$srcdir/core" || exit 1
rooms="base graph plugin compile exec data io dist host"
rank() {
  i=0
  for r in $rooms; do
    [ "$r" = "$1" ] && { echo $i; return; }
    i=$((i + 1))
  done
  echo -1
}
bad=0
checked=0
for room in $rooms; do
  [ -d "$room" ] || { echo "check_rooms: core/$room is missing"; exit 1; }
  mine=$(rank "$room")
  for f in "$room"/*.c "$room"/*.h; do
    [ -f "$f" ] || continue
    case $f in *.pb-c.[ch] | */uninstalled.h) continue ;; esac
    checked=$((checked + 1))
    # Every quoted include: "room/name.h" (the only form core files use for
    # core headers) or a name beside the file.
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
      sed 's/^\([0-9]*\):.*"\(.*\)".*/\1 \2/' >"${TMPDIR:-/tmp}/rooms.$$"
    while read -r line inc; do
      case $inc in
      */*) target=${inc%%/*} ;;
      *)
        if [ -f "$room/$inc" ]; then continue; fi
        case $inc in
        config.h) continue ;;
        esac
        echo "core/$f:$line: includes \"$inc\" without its room"
        bad=$((bad + 1))
        continue
        ;;
      esac
      theirs=$(rank "$target")
      if [ "$theirs" -lt 0 ]; then
        echo "core/$f:$line: includes \"$inc\", which is in no room"
        bad=$((bad + 1))
      elif [ "$theirs" -gt "$mine" ]; then
        echo "core/$f:$line: core/$room includes \"$inc\" of core/$target, a higher room"
        bad=$((bad + 1))
      fi
    done <"${TMPDIR:-/tmp}/rooms.$$"
    rm -f "${TMPDIR:-/tmp}/rooms.$$"
  done
done
# Nothing outside the rooms.
for f in *.c *.h; do
  [ -f "$f" ] || continue
  case $f in *.pb-c.[ch] | uninstalled.h) continue ;; esac
  echo "core/$f: a core source outside the rooms"
  bad=$((bad + 1))
done
if [ "$bad" -gt 0 ]; then
  echo "check_rooms: $bad include(s) against the rooms' direction"
  exit 1
fi
echo "check_rooms: $checked files, every include points down or sideways within its room"
