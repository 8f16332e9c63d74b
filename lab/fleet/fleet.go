// Package fleet is the instructor's view of a whole course section: over
// SSH it runs `mltrain verify --json` (`mltrain fleet verify`) or `mltrain
// backup` to the course's S3 (`mltrain fleet backup`) on every student's
// node, in parallel, and merges the answers into one report in which each
// host ends in exactly one state.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/verify"
)

// The states a host ends in; passed and failed are verify's own.
const (
	Passed      = verify.NodePassed    // every check passed (or was skipped)
	Rehearsed   = verify.NodeRehearsed // every check passed, some only under conditions (quick, reduced CPUs, CPU rehearsal)
	Failed      = verify.NodeFailed    // verify ran and some checks failed, or it could not run
	Unreachable = "unreachable"        // nothing answered SSH at the address
	AuthRefused = "auth-refused"       // the SSH server refused every key offered
	HostKey     = "host-key"           // the host key is unknown, or changed
	NoMltrain   = "no-mltrain"         // mltrain is missing on the host, or too old to verify
	NoLab       = "no-lab"             // mltrain runs there, but no lab was made
	TimedOut    = "timed-out"          // the host did not finish within --timeout
)

// States lists every state, best first.
var States = []string{Passed, Rehearsed, Failed, Unreachable, AuthRefused, HostKey, NoMltrain, NoLab, TimedOut}

// Options tune Run.
type Options struct {
	// Identity is a private key file; empty: the agent, then ~/.ssh/id_*.
	Identity string
	// KnownHosts is the known_hosts file (default ~/.ssh/known_hosts).
	KnownHosts string
	// AcceptNew records an unknown host key instead of refusing it.
	AcceptNew bool
	// Parallel is how many hosts are checked at once (default 16).
	Parallel int
	// Timeout bounds each host, connecting included (default 3m).
	Timeout time.Duration
	// Mltrain is the command run on the hosts (default "mltrain").
	Mltrain string
	// Project and StateDir are passed to the remote verify when set.
	Project, StateDir string
	// Only and DataFull are the remote verify's --only and --data-full.
	Only     []string
	DataFull bool
	// User logs in to hosts whose line names none (default: this user).
	User string
	// Home holds ~/.ssh (default: this user's home).
	Home string
	// Progress gets a step per host.
	Progress progress.Reporter

	// sent sees each command line as it goes to a host: the tests' proof
	// that no secret is in one.
	sent func(h Host, cmd string)
}

// Report is the merged verification of every host, in the file's order.
type Report struct {
	OK      bool           `json:"ok"` // every host passed
	States  map[string]int `json:"states"`
	Started time.Time      `json:"started"`
	Seconds float64        `json:"seconds"`
	Hosts   []verify.Node  `json:"hosts"`
}

func (o *Options) defaults() error {
	if o.Home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("find ~/.ssh: %w", err)
		}
		o.Home = h
	}
	if o.KnownHosts == "" {
		o.KnownHosts = filepath.Join(o.Home, ".ssh", "known_hosts")
	}
	if o.User == "" {
		o.User = os.Getenv("USER")
	}
	if o.Parallel <= 0 {
		o.Parallel = 16
	}
	if o.Timeout <= 0 {
		o.Timeout = 3 * time.Minute
	}
	if o.Mltrain == "" {
		o.Mltrain = "mltrain"
	}
	return nil
}

// Run checks every host. Each host's problems are its state in the report;
// the error is for what stops the whole run (no key, an unreadable
// known_hosts, a cancelled context).
func Run(ctx context.Context, hosts []Host, o Options) (Report, error) {
	if err := o.defaults(); err != nil {
		return Report{}, err
	}
	j := job{what: "mltrain verify", command: func(int, Host) string { return remoteCommand(o) },
		judge:  func(_ int, n verify.Node, h Host, out []byte, r ran) verify.Node { return classify(n, h, o, out, r) },
		passed: func(n verify.Node) string { return fmt.Sprintf("passed (%d checks)", len(n.Report.Checks)) }}
	nodes, start, err := runHosts(ctx, hosts, o, j)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Started: start.UTC(), Hosts: nodes}
	rep.States, rep.OK = tally(nodes, Passed, Rehearsed)
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// job is what a fleet command does on each host once connected: the
// remote command line, what its SSH session's stdin carries (secrets go
// there, never in the command line), and how its output names the state.
type job struct {
	what    string // the command, for progress and time-outs: "mltrain verify"
	command func(i int, h Host) string
	stdin   []byte
	judge   func(i int, n verify.Node, h Host, out []byte, r ran) verify.Node
	passed  func(n verify.Node) string // the progress line of a host that passed
}

// runHosts does j on every host, o.Parallel at once, and returns each
// host's node in the hosts' order and when it started. o has its defaults.
func runHosts(ctx context.Context, hosts []Host, o Options, j job) ([]verify.Node, time.Time, error) {
	auth, closeAuth, err := signers(o.Identity, o.Home)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer closeAuth()
	keys, err := newHostKeys(o.KnownHosts, o.AcceptNew)
	if err != nil {
		return nil, time.Time{}, err
	}
	start := time.Now()
	nodes := make([]verify.Node, len(hosts))
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				return
			}
			progress.Begin(o.Progress, h.Name(), "connecting to "+h.Spec)
			n := checkHost(ctx, i, h, o, j, auth, keys)
			if n.State == Passed {
				progress.End(o.Progress, h.Name(), j.passed(n))
			} else {
				progress.Failed(o.Progress, h.Name(), errors.New(n.State+": "+n.Detail))
			}
			nodes[i] = n
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, time.Time{}, err
	}
	return nodes, start, nil
}

// tally counts the nodes by state; ok says whether each is in one of good.
func tally(nodes []verify.Node, good ...string) (map[string]int, bool) {
	states, ok := map[string]int{}, true
	for _, n := range nodes {
		states[n.State]++
		ok = ok && slices.Contains(good, n.State)
	}
	return states, ok
}

// dialTimeout bounds the TCP connect: a node that drops packets is
// unreachable long before a verify would time out.
const dialTimeout = 20 * time.Second

// checkHost connects, runs the job's command and names the host's state.
func checkHost(parent context.Context, i int, h Host, o Options, j job, auth ssh.AuthMethod, keys *hostKeys) verify.Node {
	t0 := time.Now()
	n := verify.Node{Host: h.Spec, Label: h.Label}
	defer func() { n.Seconds = time.Since(t0).Seconds() }()
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	defer cancel()
	timedOut := func(what string) verify.Node {
		n.State, n.Detail = TimedOut, fmt.Sprintf("no answer within --timeout %s (%s)", o.Timeout, what)
		n.Fix = "raise --timeout, or log in (ssh " + h.Spec + ") and run '" + o.line("status") + "'"
		return n
	}

	dctx, dcancel := context.WithTimeout(ctx, dialTimeout)
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", h.Addr())
	dcancel()
	if err != nil {
		n.State = Unreachable
		n.Detail, n.Fix = dialProblem(h.Addr(), err)
		return n
	}
	defer conn.Close()
	// One budget for the whole host: its end (or Ctrl-C) closes the
	// connection, which ends a stuck handshake or session.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()

	user := h.User
	if user == "" {
		user = o.User
	}
	var refused *keyProblem
	cfg := &ssh.ClientConfig{User: user, Auth: []ssh.AuthMethod{auth}, HostKeyCallback: keys.callback(&refused),
		HostKeyAlgorithms: keys.algorithms(h.Addr(), conn.RemoteAddr())}
	sc, chans, reqs, err := ssh.NewClientConn(conn, h.Addr(), cfg)
	switch {
	case err == nil:
	case refused != nil:
		n.State = HostKey
		n.Detail, n.Fix = refused.describe(o.KnownHosts)
		return n
	case ctx.Err() != nil:
		return timedOut("during the SSH handshake")
	case strings.Contains(err.Error(), "no common algorithm for host key"):
		// known_hosts holds keys of other types than the host now offers: a reinstalled node
		n.State = HostKey
		n.Detail = fmt.Sprintf("host key CHANGED: %s offers none of the key types %s holds for it (%v)", h.Addr(), o.KnownHosts, err)
		n.Fix = fmt.Sprintf("if the node was reinstalled (a new lease), forget the old key: ssh-keygen -R '%s' -f %s", knownhosts.Normalize(h.Addr()), o.KnownHosts)
		return n
	case strings.Contains(err.Error(), "unable to authenticate"), // x/crypto/ssh has no error type for these
		strings.Contains(err.Error(), "Too many authentication failures"): // an agent with more keys than MaxAuthTries
		n.State, n.Detail = AuthRefused, fmt.Sprintf("%s@%s refused every key offered (%v)", user, h.Addr(), err)
		n.Fix = "check the user (Chameleon's images: cc@) and the key: the lease's key pair, with --identity FILE or ssh-add"
		return n
	default:
		n.State = Unreachable
		n.Detail, n.Fix = handshakeProblem(h.Addr(), err)
		return n
	}
	client := ssh.NewClient(sc, chans, reqs)
	defer client.Close()
	progress.Say(o.Progress, h.Name(), "running "+j.what)
	cmd := j.command(i, h)
	if o.sent != nil {
		o.sent(h, cmd)
	}
	out, run, err := runRemote(client, cmd, j.stdin)
	if ctx.Err() != nil {
		return timedOut("while '" + j.what + "' ran")
	}
	if err != nil {
		n.State, n.Detail, n.Fix = Unreachable, err.Error(), "run again; if it persists, log in with ssh "+h.Spec
		return n
	}
	return j.judge(i, n, h, out, run)
}

// remoteCommand is the verify run on a host.
func remoteCommand(o Options) string {
	words := o.mltrainWords("verify", "--json")
	if len(o.Only) > 0 {
		words = append(words, "--only", shellQuote(strings.Join(o.Only, ",")))
	}
	if o.DataFull {
		words = append(words, "--data-full")
	}
	return strings.Join(words, " ")
}

// mltrainWords starts a command line on a host: mltrain, the command's
// words and the lab's --project and --state-dir, quoted for the remote
// shell (a leading ~/ in --mltrain is left to the shell to expand).
func (o Options) mltrainWords(words ...string) []string {
	bin := shellQuote(o.Mltrain)
	if rest, ok := strings.CutPrefix(o.Mltrain, "~/"); ok {
		bin = "~/" + shellQuote(rest)
	}
	out := append([]string{bin}, words...)
	if o.Project != "" {
		out = append(out, "--project", shellQuote(o.Project))
	}
	if o.StateDir != "" {
		out = append(out, "--state-dir", shellQuote(o.StateDir))
	}
	return out
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
