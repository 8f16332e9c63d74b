package food11

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
)

// Issues 31 and 32, item 4: the words a next step names are the user's
// load, with its source, pin and volume.
func TestAgainKeepsTheUsersSourcePinAndVolume(t *testing.T) {
	pin := strings.Repeat("ab", 32)
	cases := []struct {
		o    Options
		want string
	}{
		{Options{}, "data food11 --volume food11"},
		{Options{URL: DefaultURL}, "data food11 --volume food11"},
		{Options{URL: "https://mirror/f.zip", SHA256: pin, Volume: "mine"}, "data food11 --url https://mirror/f.zip --sha256 " + pin + " --volume mine"},
		{Options{Zip: "my.zip", Volume: "mine", Strict: true, AllowMissingClasses: true, Force: true, Lock: LockOptions{NoWait: true}},
			"data food11 --zip my.zip --volume mine --force --strict --allow-missing-classes --no-wait"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, strings.Join(c.o.again(), " "))
	}
	w := Options{URL: "https://mirror/f.zip", SHA256: pin, Volume: "mine", Force: true}.again("--force", "--strict")
	assert.Equal(t, "data food11 --url https://mirror/f.zip --sha256 "+pin+" --volume mine --force --strict", strings.Join(w, " "), "a flag is named once")
	assert.Equal(t, "data food11 --zip PATH --volume mine --force --strict", strings.Join(withSource(w, "--zip", "PATH"), " "), "another source drops the old one and its pin")
	assert.Equal(t, "data food11 --volume mine --force --strict", strings.Join(withCourseZip(w), " "))
	assert.Equal(t, "data food11 --url https://mirror/f.zip --sha256 "+pin+" --volume mine --force", strings.Join(withoutFlag(w, "--strict", false), " "))
}

// The next steps below Run, written before Run said whose load it is, name
// the volume they act on.
func TestNextStepsOutsideRunNameTheVolume(t *testing.T) {
	h := &helper{volume: "mine"}
	assert.Equal(t, []string{"data", "food11", "--volume", "mine", "--force"}, h.rerun("--force"))
	h.again = Options{Zip: "z.zip", Volume: "mine"}.again()
	assert.Equal(t, []string{"data", "food11", "--zip", "z.zip", "--volume", "mine", "--force"}, h.rerun("--force"))
	assert.Equal(t, []string{"data", "food11", "--zip", "z.zip", "--volume", "mine"}, LoadOptions{Zip: "z.zip", Volume: "mine"}.againWords())

	err := strictErr(true, "mine", []string{"training has 23 images"}, Options{Zip: "z.zip", Volume: "mine", Strict: true}.again())
	assert.Equal(t, "load the course's zip with 'mltrain data food11 --volume mine --strict --force', or keep this one with 'mltrain data food11 --zip z.zip --volume mine'", nextOf(t, err))
}

// nextOf is err's next step as typed on the default lab.
func nextOf(t *testing.T, err error) string {
	t.Helper()
	n, ok := clierr.NextOf(err)
	require.True(t, ok, "%v carries a next step", err)
	return n.String()
}
