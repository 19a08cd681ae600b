package httpsource

import (
	"encoding/json"
	"fmt"

	"github.com/tidwall/sjson"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
)

// requestBody is source.body with the position's values set at their
// paths (sjson); nil when the request has no body.
func requestBody(base spec.BodyText, sets []contract.BodyValue) ([]byte, error) {
	if base == "" && len(sets) == 0 {
		return nil, nil
	}
	body := []byte(base)
	if len(body) == 0 {
		body = []byte("{}")
	}
	for _, v := range sets {
		var err error
		if raw, ok := v.Value.(json.RawMessage); ok {
			body, err = sjson.SetRawBytes(body, v.Path, raw)
		} else {
			body, err = sjson.SetBytes(body, v.Path, v.Value)
		}
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", v.Path, err)
		}
	}
	return body, nil
}
