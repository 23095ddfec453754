#!/bin/sh
# make_tokens DIR: writes the coordinator's token file DIR/tokens.json (an admin for people and
# one agent token each for green and purple) and the agents' token files DIR/green.token and
# DIR/purple.token, from /dev/urandom. Does nothing when DIR/tokens.json exists, so tokens
# survive a restart. docker-compose.yml runs it once before the stack starts.
set -eu
dir=${1:-/secrets}
[ -f "$dir/tokens.json" ] && exit 0
umask 077
token() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
admin=$(token)
green=$(token)
purple=$(token)
printf '%s' "$admin" >"$dir/admin.token"
printf '%s' "$green" >"$dir/green.token"
printf '%s' "$purple" >"$dir/purple.token"
cat >"$dir/tokens.json.tmp" <<JSON
{"tokens": [
  {"token": "$admin", "principal": "ops", "role": "admin"},
  {"token": "$green", "principal": "green", "role": "agent"},
  {"token": "$purple", "principal": "purple", "role": "agent"}
]}
JSON
mv "$dir/tokens.json.tmp" "$dir/tokens.json"
echo "make_tokens: wrote $dir/tokens.json, admin.token, green.token, purple.token"
