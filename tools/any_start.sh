#!/usr/bin/env bash
# Fits a twin experiment from the bottom, the middle and the top of its
# scene's `material.log10_youngs_range`, with the scene's own fields and
# with the per-driver default (`[fit.stiffness] field = "drivers"`), and
# prints each fit's recovery and its loss against the truth's own loss:
# the acceptance runs of a start-insensitive fit (docs/benchmarks.md,
# "Fits from any start").
#
#   tools/any_start.sh scenes/fox.toml [truth.toml] [out-dir]
#
# Needs the release binary (cargo build --release). FIELDS="scene" runs the
# scene's own fields only. The scene's frames must
# come with a truth: `physfit synth`'s, or the truth file given.
set -euo pipefail
scene=${1:?usage: tools/any_start.sh scene.toml [truth.toml] [out-dir]}
truth=${2:-}
out=${3:-out/any_start}
bin=${PHYSFIT:-target/release/physfit}
dir=$(dirname "$scene")
range=$(grep -E '^log10_youngs_range' "$scene" | sed -E 's/.*\[ *([0-9.eE+-]+) *, *([0-9.eE+-]+) *\].*/\1 \2/')
read -r lo hi <<<"$range"
mid=$(awk -v a="$lo" -v b="$hi" 'BEGIN { print (a + b) / 2 }')
mkdir -p "$out"
for field in ${FIELDS:-scene drivers}; do
  for start in "$lo" "$mid" "$hi"; do
    name="$(basename "$scene" .toml)-$field-$start"
    copy="$dir/.$name.toml"
    e=$(awk -v l="$start" 'BEGIN { printf "%.6e", 10 ^ l }')
    sed -E "s/^youngs_modulus *=.*/youngs_modulus = $e/" "$scene" >"$copy"
    if [ "$field" = drivers ]; then
      sed -i -E '/^\[fit.stiffness\]/,/^\[/ s/^field *=.*/field = "drivers"/' "$copy"
      # A per-driver field takes no regions: drop the table (up to the next header).
      sed -i -E '/^\[fit\.stiffness\.regions\]/,/^\[/{/^\[fit\.stiffness\.regions\]/d;/^\[/!d}' "$copy"
    fi
    args=(fit "$copy" --out "$out/$name" --force)
    [ -n "$truth" ] && args+=(--truth "$truth")
    start_s=$(date +%s)
    "$bin" "${args[@]}" 2>"$out/$name.log" || { echo "$name: failed, see $out/$name.log"; rm -f "$copy"; continue; }
    rm -f "$copy"
    echo "$name ($(( $(date +%s) - start_s )) s):"
    grep -E "^(recovery of the truth|the truth's own parameters|fitted rollout)" "$out/$name.log" | sed 's/^/  /' || true
  done
done
