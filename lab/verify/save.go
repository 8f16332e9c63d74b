package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/mltrain/mltrain/internal/atomicfile"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

// Save keeps r as the lab's last verify report, the JSON 'verify --json'
// prints, in d's reports/verify.json: atomically (a backup reading it sees
// the previous report or this one) and 0600 like the state dir's other
// files. A check's evidence should never hold a secret; should one, the
// lab's secrets are replaced by REDACTED, since a backup carries this file.
func Save(d state.Dir, r Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the verify report: %w", err)
	}
	var creds plan.Credentials
	if err := d.ReadJSON(state.CredentialsFile, &creds); err == nil { // an incomplete file's secrets too
		for _, s := range creds.Secrets() {
			b = bytes.ReplaceAll(b, []byte(s), []byte("REDACTED"))
		}
	}
	if err := os.MkdirAll(d.File(state.ReportsDir), 0o700); err != nil {
		return fmt.Errorf("saving the verify report in %s: %w", d.File(state.ReportsDir), err)
	}
	if err := atomicfile.Write(d.File(state.VerifyReportFile), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("saving the verify report: %w", err)
	}
	return nil
}
