package paging

import "github.com/idemsync/idemsync/contract"

// Storable fails for a position the checkpoint cannot hold as it is. The
// checkpoint is JSON, which writes a string that is not valid UTF-8 with
// U+FFFD in place of its bad bytes: a next cursor, next URL or Link from
// such an API would be stored altered, and a resumed run would ask for
// another page than the one the interrupted run was at
// (docs/job-file.md, "pagination"). A position is storable when it reads
// back from its stored form as itself.
func Storable(a At) error {
	if a == nil {
		return nil
	}
	if back, err := Of(a.Style()).decode(encodeAt(a)); err == nil && back == a {
		return nil
	}
	// The value (the API's, or replay's --from) may carry a credential (a signed next
	// URL): the error names what it is, not what it holds.
	return contract.Errorf(contract.Permanent, "the %s position is not valid UTF-8: a checkpoint cannot store it", a.Style())
}
