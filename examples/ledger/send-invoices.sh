#!/usr/bin/env bash
# send-invoices.sh: e-mail every invoice of a JSON-lines file once, however
# often cron runs this script and however many copies of it overlap
# (docs/ledger.md). Each line is an invoice: {"id":…,"email":…,"amount":…}.
#
#   IDEMSYNC_STATE=/var/lib/idemsync/state.db MAIL_API_URL=https://mail.example.com \
#     send-invoices.sh invoices.jsonl
#
# Needs idemsync, jq and curl on PATH.
set -u
: "${MAIL_API_URL:?set MAIL_API_URL}"

# This run's own --owner: never $$, which is the same in every container
# (PID 1) and on every host, and would hand one copy's live claims to the
# other (docs/ledger.md, "The same owner").
run_id=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
out=$(mktemp) # the API's answer; not /tmp/NAME.$$, for the same reason
trap 'rm -f "$out"' EXIT

while IFS= read -r invoice || [ -n "$invoice" ]; do
  [ -z "$invoice" ] && continue
  id=$(jq -r .id <<<"$invoice")
  key="invoice-$id:send" # what the unit is; never a time of delivery

  # Claim before the side effect. Every status exits 0; a non-zero exit is
  # the ledger failing (store unreachable: 3): stop, send nothing.
  if ! claim=$(idemsync key claim "$key" --ns mail --params "$invoice" --ttl 5m --owner "cron-$run_id"); then
    echo "ledger unavailable; nothing sent: $claim" >&2
    exit 3
  fi
  case $(jq -r .status <<<"$claim") in
  acquired)
    token=$(jq -r .token <<<"$claim")
    # The same on every attempt of this invoice: a mail API that honours
    # Idempotency-Key sends once even when this script died after sending.
    idem=$(jq -r .downstream_key <<<"$claim")
    code=$(curl -sS -o "$out" -w '%{http_code}' -X POST "$MAIL_API_URL/send" \
      -H "Idempotency-Key: $idem" -H 'Content-Type: application/json' --data "$invoice") || code=000
    body=$(cat "$out" 2>/dev/null); : >"$out"
    jq -e . >/dev/null 2>&1 <<<"$body" || body=$(jq -Rn --arg b "$body" '$b')
    case $code in
    2??) idemsync key complete "$key" --ns mail --token "$token" --result "$body" >/dev/null
         echo "$key: sent" ;;
    4??) if [ "$code" = 408 ] || [ "$code" = 429 ]; then
           idemsync key fail "$key" --ns mail --token "$token" --retryable --not-before 10m --error "{\"http\":$code}" >/dev/null
           echo "$key: HTTP $code, next run"
         else
           idemsync key fail "$key" --ns mail --token "$token" --permanent --error "{\"http\":$code,\"body\":$body}" >/dev/null
           echo "$key: HTTP $code, failed for good" >&2
         fi ;;
    *)   idemsync key fail "$key" --ns mail --token "$token" --retryable --error "{\"http\":\"$code\"}" >/dev/null
         echo "$key: HTTP $code, next run" ;;
    esac ;;
  completed) echo "$key: already sent" ;;
  in_progress | retry_later) echo "$key: $(jq -r .status <<<"$claim"), next run" ;;
  *) echo "$key: needs a person: $claim" >&2 ;; # failed, held, mismatch
  esac
done <"${1:-/dev/stdin}"
