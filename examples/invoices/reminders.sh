#!/usr/bin/env bash
# reminders.sh: send one reminder per new invoice, exactly once, however
# often cron runs this script, however it dies, however many copies overlap
# (docs/changes.md, docs/ledger.md).
#
#   */5 * * * *  cd /srv/billing && idemsync run invoices.yaml && EMAIL_URL=https://mail.example.com ./reminders.sh
#
# 1. idemsync changes hands out the feed's next inserts (I) in a batch
#    leased to the consumer "reminders"; a second copy gets exit 4 and stops.
# 2. Each invoice's reminder is a ledger key, invoice:ID:reminder, claimed
#    before the email and completed after; the email API gets the claim's
#    downstream_key as Idempotency-Key, so a retry after a send whose answer
#    was lost sends nothing twice.
# 3. The batch is acknowledged through the last invoice done; the rest (a
#    failed send, a reminder another copy holds) comes again next run.
#
# A claim that finds a lease that ended without an outcome (a sender killed
# between claim and complete: the email may have gone) is reported in
# $REPORT (previous: expired_unknown) and retried with the same key.
#
# Env: EMAIL_URL (required), JOB (invoices.yaml), REPORT (expired_unknown.log),
# LEASE (the batch's lease, 5m), CLAIM_TTL (a reminder's claim, 1m),
# IDEMSYNC_STATE (the ledger's store). Needs idemsync, jq and curl.
set -u
: "${EMAIL_URL:?set EMAIL_URL}"
JOB=${JOB:-invoices.yaml}
REPORT=${REPORT:-expired_unknown.log}
LEASE=${LEASE:-5m}
CLAIM_TTL=${CLAIM_TTL:-1m}

while :; do
  batch=$(idemsync changes "$JOB" --consumer reminders --ops I --limit 20 --lease "$LEASE") || exit $?
  id=$(jq -r .batch <<<"$batch")
  [ -z "$id" ] && exit 0 # caught up
  through=0 stop=0
  while IFS= read -r ev; do
    inv=$(jq -r .key <<<"$ev")
    seq=$(jq -r .seq <<<"$ev")
    key="invoice:$inv:reminder" # what the unit is: one reminder per invoice
    claim=$(idemsync key claim "$key" --ns reminders --ttl "$CLAIM_TTL" --params "{\"invoice\":\"$inv\"}") || { stop=1; break; }
    case $(jq -r .status <<<"$claim") in
    acquired)
      if [ "$(jq -r '.previous // empty' <<<"$claim")" = expired_unknown ]; then
        echo "$key expired_unknown attempt $(jq -r .attempt <<<"$claim")" >>"$REPORT"
      fi
      token=$(jq -r .token <<<"$claim")
      idem=$(jq -r .downstream_key <<<"$claim")
      if out=$(curl -fsS -m 1 -X POST "$EMAIL_URL/send" -H "Idempotency-Key: $idem" \
        -H 'Content-Type: application/json' --data "{\"invoice\":\"$inv\"}"); then
        idemsync key complete "$key" --ns reminders --token "$token" --result "$out" >/dev/null || { stop=1; break; }
      else
        idemsync key fail "$key" --ns reminders --token "$token" --retryable --not-before 1s >/dev/null
        stop=1
        break
      fi ;;
    completed) ;; # sent before
    *) stop=1; break ;; # in_progress, retry_later, held, failed: not now
    esac
    through=$seq
  done < <(jq -c '.events[]' <<<"$batch")
  if [ "$stop" = 0 ]; then
    idemsync changes ack "$JOB" --consumer reminders --batch "$id" >/dev/null || exit $?
  else
    if [ "$through" != 0 ]; then
      idemsync changes ack "$JOB" --consumer reminders --batch "$id" --through "$through" >/dev/null || exit $?
    fi
    exit 3 # the rest comes again next run (after the lease when nothing was acked)
  fi
done
