#!/usr/bin/env bash
# Food-11 load benchmark (not a test; run by hand or `make bench-food11`):
# mltrain's load of a Food-11-shaped zip (16,643 images, ~1.1 GiB, generated
# once and cached outside the repo) into a Docker volume, by its default
# method (the extractor in a helper container) and by the engine's archive
# API (the method before it), against `unzip -q` into a local dir, the
# course's way (unzip + Python move loop) and `cp -r` of the unzipped tree
# (the floor for writing the tree); in one run, interleaved, ROUNDS times.
# Prints min/median/max of each and of its per-round ratio to unzip, and the
# peak RSS of mltrain and of its extractor.
# Needs: docker, unzip, /usr/bin/time, python3 (apt-get install unzip time).
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE=${MLTRAIN_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mltrain-bench}
ROUNDS=${ROUNDS:-5}
VOL=mltrain-bench-food11
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/food11-bench.XXXXXX")
trap 'rm -rf "$WORK"; docker volume rm -f $VOL >/dev/null 2>&1 || true' EXIT
for t in unzip python3 docker; do command -v $t >/dev/null || { echo "missing $t (apt-get install unzip time)"; exit 1; }; done
[ -x /usr/bin/time ] || { echo "missing /usr/bin/time (apt-get install time)"; exit 1; }

mkdir -p "$CACHE"
go build -o "$WORK/driver" ./bench/food11/driver
ZIP=$CACHE/food11-shaped.zip
SMALL=$CACHE/food11-shaped-quarter.zip
[ -f "$ZIP" ] || "$WORK/driver" gen -out "$ZIP"
[ -f "$SMALL" ] || "$WORK/driver" gen -out "$SMALL" -scale 0.25
ls -l "$ZIP" "$SMALL"
cat "$ZIP" "$SMALL" >/dev/null # warm the page cache: every contender reads from memory

secs() { /usr/bin/time -f %e "$@" 2>&1 >/dev/null | tail -1; }
# load METHOD ZIP OUTFILE: time the driver's load, keep its RSS and output
load() {
  docker volume rm -f $VOL >/dev/null; sync
  /usr/bin/time -v "$WORK/driver" load -zip "$2" -volume $VOL -method "$1" 2>"$WORK/time" | tee -a "$WORK/log" "$WORK/last"
  awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,p,":"); s=0; for(i=1;i<=n;i++) s=s*60+p[i]; print s}' "$WORK/time" >>"$3"
  grep 'Maximum resident' "$WORK/time" | awk '{print $NF}' >>"$3.rss"
  sed -n 's/.*helper peak RSS \([0-9.]*\) MiB.*/\1/p' "$WORK/last" >>"$3.helper"
}
for r in $(seq "$ROUNDS"); do
  rm -rf "$WORK/u" "$WORK/c"; mkdir "$WORK/u"; sync
  secs unzip -q "$ZIP" -d "$WORK/u" >>"$WORK/unzip"
  sync
  secs cp -r "$WORK/u" "$WORK/c" >>"$WORK/cp"
  rm -rf "$WORK/u" "$WORK/c"; mkdir "$WORK/u"; sync
  /usr/bin/time -f %e sh -c "unzip -q '$ZIP' -d '$WORK/u' && python3 bench/food11/course_move.py '$WORK/u'" 2>>"$WORK/course"
  test "$(find "$WORK/u" -name '*.jpg' | wc -l)" = 16643
  rm -rf "$WORK/u"
  load extractor "$ZIP" "$WORK/mltrain"
  load archive "$ZIP" "$WORK/archive"
done
load "" "$SMALL" "$WORK/small"
docker volume rm -f $VOL >/dev/null; sync
/usr/bin/time -v "$WORK/driver" load -zip "$ZIP" -volume $VOL -sha256 "" 2>"$WORK/time.hash" | tee -a "$WORK/log"
RSS_HASH=$(grep 'Maximum resident' "$WORK/time.hash" | awk '{print $NF}')

# stats FILE: min median max of a column of numbers
stats() { sort -n "$1" | awk '{a[NR]=$1} END {printf "%.2f %.2f %.2f", a[1], a[int((NR+1)/2)], a[NR]}'; }
# ratios FILE: per-round FILE/unzip, as a column
ratios() { paste "$1" "$WORK/unzip" | awk '{printf "%.3f\n", $1/$2}'; }
echo
echo "rounds: $ROUNDS, seconds per round (interleaved; all read the zip from the page cache)"
printf "%-40s %s\n" "contender" "min / median / max    per-round ratio to unzip: min / median / max"
for c in unzip cp course mltrain archive; do
  case $c in
    unzip) name="unzip -q into a dir" ;;
    cp) name="cp -r of the unzipped tree (floor)" ;;
    course) name="course way (unzip + python move)" ;;
    mltrain) name="mltrain load (extractor, default)" ;;
    archive) name="mltrain load (archive API, before)" ;;
  esac
  ratios "$WORK/$c" >"$WORK/$c.ratio"
  read -r a b d <<<"$(stats "$WORK/$c")"; read -r x y z <<<"$(stats "$WORK/$c.ratio")"
  printf "%-40s %6.2f / %6.2f / %6.2f   %.2fx / %.2fx / %.2fx\n" "$name" "$a" "$b" "$d" "$x" "$y" "$z"
done
echo "raw: unzip $(tr '\n' ' ' <"$WORK/unzip")| extractor $(tr '\n' ' ' <"$WORK/mltrain")| archive $(tr '\n' ' ' <"$WORK/archive")"
kib() { sort -n "$1" | tail -1; }
echo "peak RSS, mltrain process: $(($(kib "$WORK/mltrain.rss")/1024)) MiB (extractor method), $(($(kib "$WORK/archive.rss")/1024)) MiB (archive method), $(($(kib "$WORK/small.rss")/1024)) MiB (quarter-size zip), $((RSS_HASH/1024)) MiB (with sha256)"
echo "peak RSS, extractor in the helper container: $(sort -n "$WORK/mltrain.helper" | tail -1) MiB (goal for each: <= 64 MiB)"
echo "goal: mltrain (extractor) median <= 0.6x unzip"
