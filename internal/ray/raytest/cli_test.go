package raytest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckRayLine(t *testing.T) {
	const jupyter = "http://ray-head:8265"
	for _, tc := range []struct {
		line    string
		mention bool
		bad     string // part of the error; "" when the line is right
	}{
		{line: "ray job submit --no-wait --runtime-env runtime.json --working-dir . --entrypoint-num-gpus=2 -- python train.py --mode plain"},
		{line: "ray job stop --no-wait raysubmit_1"},
		{line: "ray job logs -f raysubmit_1"},
		{line: "ray job stop", mention: true},
		{line: "ray list actors --filter state=PENDING --limit 10"},
		{line: "ray status --address ray-head:6379"},
		{line: "ray job submit --nosuch -- python x.py", bad: "no such option --nosuch"},
		{line: "ray job submit --working-dir", bad: "requires an argument"},
		{line: "ray job submit --no-wait=true -- python x.py", bad: "does not take a value"},
		{line: "ray job stop", bad: "0 arguments"},
		{line: "ray job stop a b", bad: "2 arguments"},
		{line: "ray list things", bad: `"things" is not one of`},
		{line: "ray status", bad: "it would not connect"},
		{line: "ray status", mention: true, bad: "it would not connect"},
		{line: "ray status --address http://ray-head:8265", bad: "it would not connect"},
		{line: "ray frobnicate", bad: "not a Ray command"},
	} {
		err := CheckRayLine(strings.Fields(tc.line), jupyter, tc.mention)
		if tc.bad == "" {
			assert.NoError(t, err, tc.line)
		} else if assert.Error(t, err, tc.line) {
			assert.Contains(t, err.Error(), tc.bad, tc.line)
		}
	}
}
