package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mltrain/mltrain/internal/clierr"
)

// Every command's bad flag value is a usage error: exit 2, the value named
// in the message, a Next line, and nothing reached (runOffline fails a test
// whose command connects to the engine).
func TestBadFlagValuesExit2NamingTheValue(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // no lab state: a check after a state read would fail differently
	cases := []struct {
		args  []string
		value string // what the message must name
	}{
		{[]string{"up", "--pull", "sometimes"}, `"sometimes"`},
		{[]string{"build", "--pull", "sometimes"}, `"sometimes"`},
		{[]string{"join", "--pull", "sometimes"}, `"sometimes"`},
		{[]string{"build", "--vendor", "intel"}, `"intel"`},
		{[]string{"logs", "--tail", "lots"}, `"lots"`},
		{[]string{"logs", "--tail", "-5"}, `"-5"`},
		{[]string{"up", "--timeout", "soon"}, `"soon"`},
		{[]string{"up", "--data", "food12"}, `"food12"`},
		{[]string{"up", "--shm-size", "huge"}, `"huge"`},
		{[]string{"up", "--ray-version", "banana"}, `"banana"`},
		{[]string{"up", "--bind", "notanip"}, `"notanip"`},
		{[]string{"up", "--workers", "-3"}, "-3"},
		{[]string{"render", "--shm-size", "huge"}, `"huge"`},
		{[]string{"lab", "fault", "--cpus", "-1"}, "--cpus -1"},
		{[]string{"lab", "tune", "--num-samples", "-2"}, "--num-samples -2"},
		{[]string{"lab", "submit", "--epochs", "-1"}, "--epochs -1"},
		{[]string{"lab", "submit", "--timeout", "-5m"}, "--timeout -5m"},
		{[]string{"lab", "infeasible", "--observe", "-1s"}, "--observe -1s"},
		{[]string{"lab", "fault", "--checkpoint-timeout", "-1m"}, "--checkpoint-timeout -1m"},
		{[]string{"lab", "bogus"}, `"bogus"`},
		{[]string{"fleet", "verify", "--parallel", "0", "h1"}, "--parallel (0)"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.args), func(t *testing.T) {
			_, stderr, code := runOffline(t, c.args...)
			assert.Equal(t, clierr.ExitUsage, code, stderr)
			first, _, _ := strings.Cut(stderr, "\n")
			assert.Contains(t, first, c.value, "the Error line names the bad value")
			assert.Contains(t, stderr, "\nNext: ")
		})
	}
}
