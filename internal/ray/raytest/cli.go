package raytest

// The Ray CLI as the lab's documents use it: each command's options and
// arguments, read from Ray's click definitions (docs/ray-fidelity.md cites
// them), so a `ray ...` line a student is told to type can be checked
// without a Ray installation.

import (
	"fmt"
	"slices"
	"strings"
)

// AddressForm is the address a Ray command takes from --address or
// RAY_ADDRESS.
type AddressForm string

const (
	// AddressDashboard: the Jobs/State clients (JobSubmissionClient,
	// StateApiClient) take the dashboard's http(s):// URL; what they
	// do with a bare host:port is not read here, so it is not judged.
	AddressDashboard AddressForm = "dashboard URL"
	// AddressGCS: `ray status` canonicalizes a bootstrap address
	// (services.canonicalize_bootstrap_address_or_die) and opens a
	// GcsClient on it: host:port of the GCS, no scheme.
	AddressGCS AddressForm = "GCS host:port"
)

// RayCommand is one Ray CLI command: its options (true: takes a value) and
// positional arguments.
type RayCommand struct {
	Source  string
	Options map[string]bool
	MinArgs int
	MaxArgs int      // -1: any number (click nargs=-1)
	Choices []string // the first argument's click.Choice, if any
	Address AddressForm
}

// commonJob are the options every `ray job` command adds: --address, and
// add_common_job_options (cli_utils.py: --verify, --headers) and
// add_click_logging_options (autoscaler/_private/cli_logger.py:
// --log-style, --log-color, -v/--verbose).
func commonJob(extra map[string]bool) map[string]bool {
	m := map[string]bool{"--address": true, "--verify": true, "--headers": true,
		"--log-style": true, "--log-color": true, "-v": false, "--verbose": false}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

const jobCLI = "python/ray/dashboard/modules/job/cli.py"

// RayCLI are the Ray commands the lab's documents may name, by their words
// after "ray".
var RayCLI = map[string]RayCommand{
	"job submit": {Source: jobCLI + ": submit", Address: AddressDashboard, MinArgs: 1, MaxArgs: -1,
		Options: commonJob(map[string]bool{"--job-id": true, "--submission-id": true, "--runtime-env": true,
			"--runtime-env-json": true, "--working-dir": true, "--metadata-json": true,
			"--entrypoint-num-cpus": true, "--entrypoint-num-gpus": true, "--entrypoint-memory": true,
			"--entrypoint-resources": true, "--entrypoint-label-selector": true, "--no-wait": false})},
	"job status": {Source: jobCLI + ": status", Address: AddressDashboard, MinArgs: 1, MaxArgs: 1, Options: commonJob(nil)},
	"job stop": {Source: jobCLI + ": stop", Address: AddressDashboard, MinArgs: 1, MaxArgs: 1,
		Options: commonJob(map[string]bool{"--no-wait": false})},
	"job delete": {Source: jobCLI + ": delete", Address: AddressDashboard, MinArgs: 1, MaxArgs: 1, Options: commonJob(nil)},
	"job logs": {Source: jobCLI + ": logs", Address: AddressDashboard, MinArgs: 1, MaxArgs: 1,
		Options: commonJob(map[string]bool{"-f": false, "--follow": false})},
	"job list": {Source: jobCLI + ": list", Address: AddressDashboard, MaxArgs: 0, Options: commonJob(nil)},
	"list": {Source: "python/ray/util/state/state_cli.py: ray_list", Address: AddressDashboard, MinArgs: 1, MaxArgs: 1,
		Choices: []string{"actors", "jobs", "placement-groups", "nodes", "workers", "tasks", "objects", "runtime-envs", "cluster-events"},
		Options: map[string]bool{"--format": true, "-f": true, "--filter": true, "--limit": true, "--detail": false,
			"--timeout": true, "--address": true, "--headers": true, "--verify": true}},
	// ray start: only the options the lab's pages name (scripts.py's
	// start has many more; add one here when a page names it).
	// It runs in the lab's Ray containers, its --address given.
	"start": {Source: "python/ray/scripts/scripts.py: start", MaxArgs: 0,
		Options: map[string]bool{"--head": false, "--address": true, "--block": false, "--node-ip-address": true,
			"--num-cpus": true, "--num-gpus": true}},
	"status": {Source: "python/ray/scripts/scripts.py: status", Address: AddressGCS, MaxArgs: 0,
		Options: map[string]bool{"--address": true, "-v": false, "--verbose": false}},
}

// CheckRayLine checks one `ray ...` command line (its words, "ray"
// first) against RayCLI: the command exists, every option is one of its
// own, the arguments fit. rayAddress is RAY_ADDRESS where the line runs
// (Jupyter's: the dashboard's URL): a command that needs another address
// form and is not given --address fails. A mention (prose naming the
// command: "`ray job stop` may not end it") may leave out its arguments.
func CheckRayLine(words []string, rayAddress string, mention bool) error {
	if len(words) == 0 || words[0] != "ray" {
		return fmt.Errorf("not a ray command: %q", strings.Join(words, " "))
	}
	rest := words[1:]
	var path string
	var cmd RayCommand
	for n := min(2, len(rest)); n >= 1; n-- {
		if c, ok := RayCLI[strings.Join(rest[:n], " ")]; ok {
			path, cmd, rest = strings.Join(rest[:n], " "), c, rest[n:]
			break
		}
	}
	if path == "" {
		return fmt.Errorf("ray %s: not a Ray command this table knows (add it, cited from Ray's source)", strings.Join(rest, " "))
	}
	var args []string
	address := ""
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		if w == "--" { // click: everything after is an argument
			args = append(args, rest[i+1:]...)
			break
		}
		if !strings.HasPrefix(w, "-") || w == "-" {
			args = append(args, w)
			continue
		}
		name, value, inline := strings.Cut(w, "=")
		takes, ok := cmd.Options[name]
		if !ok {
			return fmt.Errorf("ray %s: no such option %s (%s)", path, name, cmd.Source)
		}
		if takes && !inline {
			if i+1 >= len(rest) {
				return fmt.Errorf("ray %s: option %s requires an argument", path, name)
			}
			i++
			value = rest[i]
		} else if !takes && inline {
			return fmt.Errorf("ray %s: option %s does not take a value", path, name)
		}
		if name == "--address" {
			address = value
		}
	}
	if address == "" {
		address = rayAddress
	}
	if err := CheckRayAddress(path, cmd.Address, address); err != nil {
		return err
	}
	if mention && len(args) == 0 {
		return nil
	}
	if len(args) < cmd.MinArgs || (cmd.MaxArgs >= 0 && len(args) > cmd.MaxArgs) {
		return fmt.Errorf("ray %s: %d arguments, want %d to %d (%s)", path, len(args), cmd.MinArgs, cmd.MaxArgs, cmd.Source)
	}
	if len(cmd.Choices) > 0 && !slices.Contains(cmd.Choices, args[0]) {
		return fmt.Errorf("ray %s: %q is not one of %s", path, args[0], strings.Join(cmd.Choices, ", "))
	}
	return nil
}

// CheckRayAddress says whether a command that takes form accepts address.
func CheckRayAddress(path string, form AddressForm, address string) error {
	if address == "" {
		return nil
	}
	// Only the case read in Ray's source is judged: a URL given to a
	// command that opens a GcsClient on it.
	if form == AddressGCS && strings.Contains(address, "://") {
		return fmt.Errorf("ray %s reads its address as the %s, but it gets %q (a URL): it would not connect", path, form, address)
	}
	return nil
}
