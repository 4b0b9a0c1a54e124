#!/bin/sh
# The cheapest stand-in for `a3r worker run <blueprint> --result-dir DIR`: a complete,
# already finished result directory written by the shell (benchmarks launch thousands).
set -e
[ "$1" = worker ] && [ "$2" = run ] && [ "$4" = --result-dir ] || { echo "usage: worker run <blueprint> --result-dir DIR" >&2; exit 2; }
dir=$5
mkdir -p "$dir"
cp "$3" "$dir/blueprint.md"
now=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
printf '{"state":"succeeded","attempt":1,"host":"%s","pid":%s,"pgid":%s,"startedAt":"%s","heartbeatAt":"%s","step":1,"lastMetrics":{"reward_mean":1},"reason":null}\n' "${A3R_HOST:-local}" $$ $$ "$now" "$now" > "$dir/status.json"
printf '{"step":1,"time":"%s","reward_mean":1}\n' "$now" > "$dir/metrics.jsonl"
printf '# Result\n\nsucceeded at once (instant fixture worker)\n' > "$dir/result.md"
printf 'succeeded\n' > "$dir/finish.flag"
