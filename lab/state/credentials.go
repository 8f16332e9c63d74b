package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/mltrain/mltrain/internal/atomicfile"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/plan"
)

// Credentials reads the lab's credentials. It never creates them: secrets
// minted now would not be the ones the running lab (MinIO's data, Grafana's
// database, the Ray nodes) was started with, and every later call would fail
// authentication with no clear cause. Only up and render create them
// (CreateCredentials).
func (d Dir) Credentials() (plan.Credentials, error) {
	path := d.File(CredentialsFile)
	c, err := readCredentials(path)
	if IsMissing(err) {
		return plan.Credentials{}, clierr.WithNext(fmt.Errorf("the lab's credentials file %s is missing", path), clierr.Next{
			Text:     "run '%s' to re-create the lab with new credentials ('%s' first if its old MinIO and Grafana data must go), or pass the --state-dir/--project of the lab you mean",
			Commands: [][]string{{"up"}, {"down", "--volumes"}}})
	}
	if err != nil {
		return plan.Credentials{}, err
	}
	if err := c.Validate(); err != nil {
		return plan.Credentials{}, clierr.WithNext(fmt.Errorf("credentials file %s: %w", path, err), clierr.Step("run '%s' to complete it", "up"))
	}
	return c, nil
}

// CreateCredentials returns the lab's credentials, generating and storing
// them (0600) the first time; created says whether they are new. A file
// from an older mltrain is completed with the secrets it lacks. A file
// readable by others is refused, not silently fixed: its secrets may already
// have leaked, and the user should know.
func (d Dir) CreateCredentials() (c plan.Credentials, created bool, err error) {
	if err := d.Ensure(); err != nil {
		return plan.Credentials{}, false, err
	}
	path := d.File(CredentialsFile)
	c, err = readCredentials(path)
	if IsMissing(err) {
		c = plan.GenerateCredentials()
		b, _ := json.MarshalIndent(c, "", "  ")
		if err := atomicfile.WriteNew(path, append(b, '\n'), 0o600); err != nil {
			if !errors.Is(err, fs.ErrExist) {
				return plan.Credentials{}, false, clierr.WithHint(fmt.Errorf("storing credentials: %w", err), "check that the state dir is writable, or use --state-dir DIR")
			}
			// Another mltrain created it first: use theirs.
			c, err = readCredentials(path)
			return c, false, err
		}
		return c, true, nil
	}
	if err != nil {
		return plan.Credentials{}, false, err
	}
	if plan.Fill(&c) { // a file from an older mltrain lacks a newer secret
		if err := d.WriteJSON(CredentialsFile, c); err != nil {
			return plan.Credentials{}, false, err
		}
	}
	return c, false, nil
}

func readCredentials(path string) (plan.Credentials, error) {
	st, err := os.Stat(path)
	if err != nil {
		return plan.Credentials{}, err
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return plan.Credentials{}, clierr.Hintf(fmt.Sprintf("chmod 600 %s", path),
			"credentials file %s has permissions %04o: others can read the lab's secrets", path, perm)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return plan.Credentials{}, clierr.WithHint(fmt.Errorf("reading credentials %s: %w", path, err), "check the file's owner: 'ls -l "+path+"'")
	}
	var c plan.Credentials
	if err := json.Unmarshal(b, &c); err != nil {
		return plan.Credentials{}, clierr.WithNext(fmt.Errorf("credentials file %s is not valid JSON: %w", path, err), clierr.Next{
			Text:     "restore it from a backup, or move it away and run '%s' to generate new secrets (MinIO and Grafana data made with the old ones will not accept them: '%s' first)",
			Commands: [][]string{{"up"}, {"down", "--volumes"}}})
	}
	return c, nil
}
