package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/backup"
	"github.com/mltrain/mltrain/lab/verify"
)

// BackupHost is one host's outcome in 'mltrain fleet backup': its state
// (passed: its backup landed) and, when it ran, what 'mltrain backup' wrote.
type BackupHost struct {
	verify.Node
	Target string         `json:"target"` // the host's prefix: s3://bucket/course/<label>/
	Backup *backup.Result `json:"backup,omitempty"`
}

// BackupReport is the backup of every host, in the file's order.
type BackupReport struct {
	OK      bool           `json:"ok"` // every host's backup landed
	Target  string         `json:"target"`
	States  map[string]int `json:"states"`
	Started time.Time      `json:"started"`
	Seconds float64        `json:"seconds"`
	Hosts   []BackupHost   `json:"hosts"`
}

// Nodes are the hosts' nodes, for the writers shared with fleet verify.
func (r BackupReport) Nodes() []verify.Node {
	out := make([]verify.Node, len(r.Hosts))
	for i, h := range r.Hosts {
		out[i] = h.Node
	}
	return out
}

// HostDir is the folder of a host's backup under the course's prefix: its
// label, else its address, with what is not a letter, digit, '.', '_' or
// '-' made '-' (keys that need no quoting in aws s3 or a shell).
func HostDir(h Host) string {
	name := h.Label
	if name == "" {
		name = h.Address
	}
	dir := strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return r
		}
		return '-'
	}, name)
	if strings.Trim(dir, ".") == "" {
		dir = strings.Repeat("-", len(dir)) // never "." or ".."
	}
	return dir
}

// BackupTargets are the hosts' prefixes under dest (an S3 prefix). Two
// hosts that would share one are a mistake of the hosts file: a usage error.
func BackupTargets(hosts []Host, dest backup.Target) ([]backup.Target, error) {
	if dest.File != "" {
		return nil, clierr.WithCode(fmt.Errorf("%q is a file: each host backs up to its own folder of an s3://bucket/prefix", dest.File), clierr.ExitUsage)
	}
	out := make([]backup.Target, len(hosts))
	seen := map[string]Host{}
	for i, h := range hosts {
		dir := HostDir(h)
		if prev, ok := seen[dir]; ok {
			return nil, clierr.WithCode(clierr.WithHint(fmt.Errorf("hosts lines %d (%s) and %d (%s) would both back up to %s%s/", prev.Line, prev.Name(), h.Line, h.Name(), dest, dir),
				"give each host its own label (the words after the address) in the hosts file"), clierr.ExitUsage)
		}
		seen[dir] = h
		out[i] = backup.Target{Bucket: dest.Bucket, Prefix: dest.Prefix + dir + "/"}
	}
	return out, nil
}

// Backup runs 'mltrain backup' on every host, each to its own folder of
// dest (an S3 prefix, HostDir names the folder). The S3 settings are this
// machine's (the environment, or AWS_PROFILE's keys from ~/.aws/credentials)
// and reach each host as KEY=VALUE lines on the SSH session's stdin, read by
// 'mltrain backup --s3-env-stdin': never in a command line (ps on the host,
// its audit log) and never in the host's environment or files.
func Backup(ctx context.Context, hosts []Host, dest backup.Target, o Options) (BackupReport, error) {
	targets, err := BackupTargets(hosts, dest)
	if err != nil {
		return BackupReport{}, err
	}
	if err := o.defaults(); err != nil {
		return BackupReport{}, err
	}
	s3, err := backup.ResolveS3()
	if err != nil {
		return BackupReport{}, err
	}
	env, err := s3.Env()
	if err != nil {
		return BackupReport{}, err
	}
	results := make([]*backup.Result, len(hosts))
	j := job{what: "mltrain backup", stdin: env,
		command: func(i int, _ Host) string {
			return strings.Join(append(o.mltrainWords("backup", "--json", "--s3-env-stdin"), shellQuote(targets[i].String())), " ")
		},
		judge: func(i int, n verify.Node, h Host, out []byte, r ran) verify.Node {
			var a struct {
				backup.Result
				failure
			}
			jsonErr := json.Unmarshal(out, &a)
			c := command{"backup", "backup --json --s3-env-stdin", "backup result", "(an older one has no 'backup --s3-env-stdin')"}
			if n, done := unanswered(n, h, o, c, out, r, jsonErr, a.failure, r.exit == 0 && a.Target != ""); done {
				return n
			}
			results[i] = &a.Result
			n.State = Passed
			n.Detail = fmt.Sprintf("%d files (%s) in %s; sent %d changed (%s)", a.Files, humanize.IBytes(uint64(a.Bytes)), a.Target, a.Uploaded, humanize.IBytes(uint64(a.Sent)))
			if len(a.Skipped) > 0 {
				n.Detail += fmt.Sprintf("; left out %d files holding a lab secret: %s", len(a.Skipped), strings.Join(a.Skipped, ", "))
			}
			return n
		},
		passed: func(n verify.Node) string { return "backed up: " + n.Detail }}
	nodes, start, err := runHosts(ctx, hosts, o, j)
	if err != nil {
		return BackupReport{}, err
	}
	rep := BackupReport{Target: dest.String(), Started: start.UTC(), Hosts: make([]BackupHost, len(nodes))}
	for i, n := range nodes {
		rep.Hosts[i] = BackupHost{Node: n, Target: targets[i].String(), Backup: results[i]}
	}
	rep.States, rep.OK = tally(nodes, Passed)
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// WriteHTML writes the report as one self-contained HTML page, fleet
// verify's, its why column saying what each host's backup wrote.
func (r BackupReport) WriteHTML(w io.Writer) error {
	return verify.WriteNodesHTML(w, "mltrain fleet backup to "+r.Target, "backed up", r.Nodes(), r.Started)
}
