#!/usr/bin/env bash
# Food-11 load benchmark (not a test; run by hand or `make bench-food11`):
# mltrain's load of a Food-11-shaped zip (16,643 images, ~1.1 GiB, generated
# once and cached outside the repo) into a Docker volume, against `unzip -q`
# into a local dir and against the course's way (unzip + Python move loop),
# in one run, interleaved, ROUNDS times; prints medians and ratios, and
# mltrain's peak RSS for the full zip and a quarter-size one.
# Needs: docker, unzip, /usr/bin/time, python3 (apt-get install unzip time).
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE=${MLTRAIN_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mltrain-bench}
ROUNDS=${ROUNDS:-3}
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
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: >"$WORK/unzip" ; : >"$WORK/course" ; : >"$WORK/mltrain"
for r in $(seq "$ROUNDS"); do
  rm -rf "$WORK/u"; mkdir "$WORK/u"; sync
  secs unzip -q "$ZIP" -d "$WORK/u" >>"$WORK/unzip"
  rm -rf "$WORK/u"; mkdir "$WORK/u"; sync
  /usr/bin/time -f %e sh -c "unzip -q '$ZIP' -d '$WORK/u' && python3 bench/food11/course_move.py '$WORK/u'" 2>>"$WORK/course"
  test "$(find "$WORK/u" -name '*.jpg' | wc -l)" = 16643
  rm -rf "$WORK/u"
  docker volume rm -f $VOL >/dev/null; sync
  /usr/bin/time -v "$WORK/driver" load -zip "$ZIP" -volume $VOL 2>"$WORK/time.$r" | tee -a "$WORK/log"
  awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,p,":"); s=0; for(i=1;i<=n;i++) s=s*60+p[i]; print s}' "$WORK/time.$r" >>"$WORK/mltrain"
  grep 'Maximum resident' "$WORK/time.$r" | awk '{print $NF}' >>"$WORK/rss"
done
docker volume rm -f $VOL >/dev/null; sync
/usr/bin/time -v "$WORK/driver" load -zip "$SMALL" -volume $VOL 2>"$WORK/time.small" | tee -a "$WORK/log"
docker volume rm -f $VOL >/dev/null; sync
/usr/bin/time -v "$WORK/driver" load -zip "$ZIP" -volume $VOL -sha256 "" 2>"$WORK/time.hash" | tee -a "$WORK/log"

U=$(median <"$WORK/unzip"); C=$(median <"$WORK/course"); M=$(median <"$WORK/mltrain")
RSS=$(sort -n "$WORK/rss" | tail -1)
RSS_SMALL=$(grep 'Maximum resident' "$WORK/time.small" | awk '{print $NF}')
RSS_HASH=$(grep 'Maximum resident' "$WORK/time.hash" | awk '{print $NF}')
echo
echo "rounds: $ROUNDS (medians, seconds)   unzip: $(tr '\n' ' ' <"$WORK/unzip")  course: $(tr '\n' ' ' <"$WORK/course")  mltrain: $(tr '\n' ' ' <"$WORK/mltrain")"
awk -v u="$U" -v c="$C" -v m="$M" 'BEGIN {
  printf "unzip -q into a dir:             %6.2f s\n", u
  printf "course way (unzip + python move): %6.2f s\n", c
  printf "mltrain load into the volume:    %6.2f s\n", m
  printf "mltrain / unzip:  %.2fx (goal <= 1.15x)\n", m/u
  printf "mltrain / course: %.2fx\n", m/c }'
echo "mltrain peak RSS: $((RSS/1024)) MiB (1.1 GiB zip), $((RSS_SMALL/1024)) MiB (quarter-size zip), $((RSS_HASH/1024)) MiB (with sha256) (goal <= 64 MiB)"
