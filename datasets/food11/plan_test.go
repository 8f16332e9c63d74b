package food11

import (
	"archive/zip"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func planOf(t *testing.T, files []zfile) (*plan, error) {
	t.Helper()
	p := writeZip(t, t.TempDir(), "t.zip", files)
	zr, err := zip.OpenReader(p)
	require.NoError(t, err)
	t.Cleanup(func() { zr.Close() })
	return makePlan(&zr.Reader, "t.zip")
}

func TestPlanMapsCourseLayout(t *testing.T) {
	files, _ := dataset("", small(), zip.Store)
	files = append(files, zfile{name: "training/", method: zip.Store})
	p, err := planOf(t, files)
	require.NoError(t, err)
	assert.Equal(t, 23, p.counts.Split("training"))
	assert.Equal(t, 12, p.counts.Split("validation"))
	assert.Equal(t, 11, p.counts.Split("evaluation"))
	assert.Equal(t, [NumClasses]int{3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, p.counts["training"])
	assert.Equal(t, "", p.prefix)
	got := map[string]bool{}
	for _, e := range p.entries {
		got[e.target()] = true
	}
	assert.True(t, got["Food-11/training/class_10/10_1.jpg"], "class 10 goes to class_10, not class_01")
	assert.True(t, got["Food-11/evaluation/class_00/0_0.jpg"])
}

func TestPlanToleratesOneWrapperFolderAndMacJunk(t *testing.T) {
	files, _ := dataset("Food-11/", small(), zip.Deflate)
	files = append(files,
		zfile{name: "__MACOSX/Food-11/training/._0_0.jpg", data: []byte("x")},
		zfile{name: "Food-11/.DS_Store", data: []byte("x")})
	p, err := planOf(t, files)
	require.NoError(t, err)
	assert.Equal(t, "Food-11", p.prefix)
	assert.Equal(t, 2, p.skipped)
	assert.Equal(t, 46, len(p.entries))
}

func TestPlanRejects(t *testing.T) {
	good, _ := dataset("", small(), zip.Store)
	cases := []struct {
		name      string
		extra     []zfile
		drop      string // drop entries of this split
		want      string
		traversal bool
	}{
		{name: "dotdot", extra: []zfile{{name: "training/../../etc/passwd"}}, want: "'..' in path", traversal: true},
		{name: "absolute", extra: []zfile{{name: "/training/0_1000.jpg"}}, want: "absolute path", traversal: true},
		{name: "backslash", extra: []zfile{{name: "training\\..\\0_1.jpg"}}, want: "backslash", traversal: true},
		{name: "bad name", extra: []zfile{{name: "training/bread.jpg"}}, want: "not <class>_<n>.jpg"},
		{name: "class 11", extra: []zfile{{name: "training/11_0.jpg"}}, want: "class 11 is outside 0-10"},
		{name: "leading zero", extra: []zfile{{name: "training/01_0.jpg"}}, want: "not <class>_<n>.jpg"},
		{name: "unknown split", extra: []zfile{{name: "testing/0_0.jpg"}}, want: `unknown split folder "testing"`},
		{name: "nested", extra: []zfile{{name: "training/x/0_0.jpg"}}, want: "want <split>/<class>_<n>.jpg"},
		{name: "missing split", drop: "evaluation", want: "split evaluation is missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var files []zfile
			for _, f := range good {
				if c.drop == "" || !strings.HasPrefix(f.name, c.drop+"/") {
					files = append(files, f)
				}
			}
			files = append(files, c.extra...)
			_, err := planOf(t, files)
			require.Error(t, err)
			var bad *BadZipError
			require.True(t, errors.As(err, &bad), err)
			assert.Contains(t, err.Error(), c.want)
			assert.Equal(t, c.traversal, errors.Is(err, ErrTraversal))
		})
	}
}

func TestPlanRejectsDuplicatesAfterStripping(t *testing.T) {
	files, _ := dataset("", small(), zip.Store)
	files = append(files, zfile{name: "training/0_0.jpg", data: []byte("again")})
	_, err := planOf(t, files)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "appears twice")
}

func TestCheckCanonical(t *testing.T) {
	c := Counts{}
	for s, n := range CanonicalTotals {
		for i := 0; i < n; i++ {
			c.Add(s, i%NumClasses)
		}
	}
	assert.Empty(t, CheckCanonical(c))
	assert.Equal(t, CanonicalTotal, c.Total())
	a := c["validation"]
	a[3]--
	c["validation"] = a
	w := CheckCanonical(c)
	require.Len(t, w, 1)
	assert.Equal(t, "validation has 3,429 images; canonical Food-11 has 3,430", w[0])
}

func TestPlaceOf(t *testing.T) {
	s, c := placeOf("training/class_10/10_5.jpg")
	assert.Equal(t, "training", s)
	assert.Equal(t, 10, c)
	for _, bad := range []string{"training/class_01/10_5.jpg", "training/10_5.jpg", "other/class_01/1_5.jpg", "training/class_11/11_0.jpg", "training/class_1/1_0.jpg"} {
		s, _ := placeOf(bad)
		assert.Empty(t, s, bad)
	}
	assert.Equal(t, "training/class_00/0_1.jpg", relToRoot("./training/class_00/0_1.jpg"))
	assert.Equal(t, "training/class_00/0_1.jpg", relToRoot("Food-11/training/class_00/0_1.jpg"))
}
