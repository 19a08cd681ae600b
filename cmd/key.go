package cmd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/ledger"
	idsync "github.com/idemsync/idemsync/sync"
)

// keyOptions are the parsed command line of every `key` subcommand
// (docs/ledger.md); action names the subcommand.
type keyOptions struct {
	io     *IOStreams
	g      *globalOpts
	action string
	key    string

	ns, ttl, params, fingerprint, owner, onExpired string
	wait, poll                                     time.Duration
	batch                                          bool
	token, result, errJSON                         string
	retryable, permanent                           bool
	notBefore                                      time.Duration
	statuses                                       []string
	olderThan                                      string
	limit                                          int
	as                                             string
	keep                                           string
	from                                           string
	fields                                         []string
	exitCodes                                      bool
}

// newCmdKey is `idemsync key` and its subcommands; runF, when a test
// passes one, gets the parsed options instead of running them.
func newCmdKey(f *Factory, runF func(*keyOptions) error) *cobra.Command {
	c := &cobra.Command{
		Use:   "key",
		Short: "The side-effect ledger: claim a unit of work once, record its outcome",
		Long: `The side-effect ledger (docs/ledger.md): claim a key before a side effect
(a charge, an email, a POST), complete or fail it after, and every later
claim of the key replays the stored outcome instead of doing it again.
The ledger lives in the state store (--state, $IDEMSYNC_STATE, else
.idemsync/state.db in the current folder; a postgres:// URL for several
hosts). Every call prints one JSON object whose status says what happened
and exits 0; with --exit-codes each status has its own exit code (see
docs/ledger.md, "Exit codes"). A store that cannot be reached exits 3 and
nothing is claimed.`,
	}
	sub := func(action, use, short string, args cobra.PositionalArgs, flags func(c *cobra.Command, o *keyOptions)) {
		o := &keyOptions{io: f.IOStreams, g: f.globals, action: action}
		sc := &cobra.Command{
			Use:   use,
			Short: short,
			RunE: func(c *cobra.Command, a []string) error {
				// Checked here, not as cobra's Args, so that a wrong
				// argument count prints its JSON object too.
				if err := args(c, a); err != nil {
					return keyFailed(o, err)
				}
				if len(a) > 0 {
					o.key = a[0]
				}
				if runF != nil {
					return runF(o)
				}
				return runKey(c.Context(), o)
			},
		}
		sc.Flags().BoolVar(&o.exitCodes, "exit-codes", false, "exit with the status's own code (docs/ledger.md) instead of 0")
		if action != "derive" && action != "gc" && action != "list" {
			sc.Flags().StringVar(&o.ns, "ns", ledger.DefaultNS, "namespace of the key")
		}
		if flags != nil {
			flags(sc, o)
		}
		c.AddCommand(sc)
	}
	keyArg := func(c *cobra.Command, args []string) error {
		if c.Flags().Changed("batch") {
			if len(args) != 0 {
				return &usageError{err: fmt.Errorf("%s --batch reads its keys from stdin, not arguments", c.CommandPath())}
			}
			return nil
		}
		return exactArgs(1)(c, args)
	}
	sub("claim", "claim KEY [--ttl 10m] [--params JSON | --fingerprint HEX] [--owner ID] [--wait DUR]", "Claim a key before its side effect", keyArg, claimFlags)
	sub("complete", "complete KEY --token T [--result JSON]", "Record the result of the claim holding the token", exactArgs(1), func(c *cobra.Command, o *keyOptions) {
		c.Flags().StringVar(&o.token, "token", "", "the token the claim returned")
		c.Flags().StringVar(&o.result, "result", "null", "the side effect's result (JSON), replayed to later claims")
	})
	sub("fail", "fail KEY --token T (--retryable [--not-before DUR] | --permanent) [--error JSON]", "Record a failed attempt of the claim holding the token", exactArgs(1), func(c *cobra.Command, o *keyOptions) {
		c.Flags().StringVar(&o.token, "token", "", "the token the claim returned")
		c.Flags().BoolVar(&o.retryable, "retryable", false, "the key may be claimed again (from --not-before on)")
		c.Flags().BoolVar(&o.permanent, "permanent", false, "the key failed for good; later claims say failed")
		c.Flags().DurationVar(&o.notBefore, "not-before", 0, "with --retryable: not claimed again before this long")
		c.Flags().StringVar(&o.errJSON, "error", "null", "what failed (JSON), shown to later claims")
	})
	sub("heartbeat", "heartbeat KEY --token T", "Renew the lease of the claim holding the token", exactArgs(1), func(c *cobra.Command, o *keyOptions) {
		c.Flags().StringVar(&o.token, "token", "", "the token the claim returned")
	})
	sub("get", "get KEY", "Show a key's entry", exactArgs(1), nil)
	sub("list", "list [--status S,...] [--older-than DUR] [--ns NS]", "List the keys", exactArgs(0), func(c *cobra.Command, o *keyOptions) {
		c.Flags().StringVar(&o.ns, "ns", "", "only this namespace (default: every one)")
		c.Flags().StringSliceVar(&o.statuses, "status", nil, "only these states: pending, completed, failed, retry, held")
		c.Flags().StringVar(&o.olderThan, "older-than", "", "only keys last updated more than this long ago (e.g. 1h, 7d)")
		c.Flags().IntVar(&o.limit, "limit", 1000, "at most this many keys (0: all)")
	})
	sub("resolve", "resolve KEY --as completed|failed|retry|forget [--result JSON] [--error JSON]", "Set a key's outcome as an operator (a held key, a stuck one)", exactArgs(1), func(c *cobra.Command, o *keyOptions) {
		c.Flags().StringVar(&o.as, "as", "", "completed, failed, retry (claimable again) or forget (delete the key)")
		c.Flags().StringVar(&o.result, "result", "", "with --as completed: the result (JSON)")
		c.Flags().StringVar(&o.errJSON, "error", "", "with --as failed: the error (JSON)")
	})
	sub("gc", "gc [--keep 30d]", "Delete completed and failed keys older than the retention", exactArgs(0), func(c *cobra.Command, o *keyOptions) {
		c.Flags().StringVar(&o.keep, "keep", "30d", "keep keys updated less than this long ago (a replay within it is still a replay)")
	})
	sub("derive", "derive --ns NS --from JSON [--fields a,b.c]", "Print a stable key for an event (SHA-256 of its canonical JSON)", exactArgs(0), func(c *cobra.Command, o *keyOptions) {
		c.Flags().StringVar(&o.ns, "ns", ledger.DefaultNS, "namespace the key is for (printed with it)")
		c.Flags().StringVar(&o.from, "from", "", "the event (a JSON object), or - for stdin")
		c.Flags().StringSliceVar(&o.fields, "fields", nil, "only these fields (dot paths), never delivery times or retry counts")
	})
	return c
}

// keyPoll is how often claim --wait claims again by default.
const keyPoll = 200 * time.Millisecond

func claimFlags(c *cobra.Command, o *keyOptions) {
	fl := c.Flags()
	fl.StringVar(&o.ttl, "ttl", ledger.DefaultTTL.String(), "lease: another claimer may take the key this long after the claim (heartbeat renews it)")
	fl.StringVar(&o.params, "params", "", "the unit's parameters (JSON): a later claim with other ones is a mismatch")
	fl.StringVar(&o.fingerprint, "fingerprint", "", "a fingerprint (hex) of the parameters instead of --params")
	fl.StringVar(&o.owner, "owner", "", "who claims (e.g. the n8n execution id): the same owner gets its own claim back")
	fl.StringVar(&o.onExpired, "on-expired", contract.OnExpiredRetry, "when the last lease expired without an outcome: retry (acquire, previous: expired_unknown) or hold (for key resolve)")
	fl.DurationVar(&o.wait, "wait", 0, "while another holder has the key, claim again until it ends or this long passed")
	fl.DurationVar(&o.poll, "poll", keyPoll, "with --wait: how often to claim again")
	fl.BoolVar(&o.batch, "batch", false, "read JSON lines ({\"key\":...} with ns, params, fingerprint, owner, ttl, on_expired) on stdin; print one result line each")
}

// openLedger opens the state store the ledger lives on; without a job file
// it is --state, $IDEMSYNC_STATE, else .idemsync/state.db in the current
// folder (docs/ledger.md, "Where the ledger lives").
func openLedger(ctx context.Context, o *keyOptions) (contract.Ledger, io.Closer, error) {
	log, err := newLogger(o.io.ErrOut, o.g.logFormat, o.g.logLevel, o.g.quiet, idsync.NewRedactor(), "")
	if err != nil {
		return nil, nil, &usageError{err: err}
	}
	store, err := openStore(ctx, o.g.statePath(nil), log)
	if err != nil {
		return nil, nil, err
	}
	l, ok := store.(contract.Ledger)
	if !ok {
		store.Close()
		return nil, nil, fmt.Errorf("state %s keeps no ledger", stateName(o.g.statePath(nil)))
	}
	return l, store, nil
}
