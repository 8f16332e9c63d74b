package arch

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// packageMap reads docs/packages.md: each row's package and the module
// packages it may import ("internal/*": any under internal/).
func packageMap(t *testing.T, root string) map[string][]string {
	t.Helper()
	fh, err := os.Open(filepath.Join(root, "docs", "packages.md"))
	require.NoError(t, err)
	defer fh.Close()
	tick := regexp.MustCompile("`([^`]+)`")
	rows := map[string][]string{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		name := tick.FindStringSubmatch(cells[1])[1]
		var may []string
		for _, m := range tick.FindAllStringSubmatch(cells[3], -1) {
			may = append(may, m[1])
		}
		rows[name] = may
	}
	require.NoError(t, sc.Err())
	return rows
}

func allows(may []string, imp string) bool {
	for _, m := range may {
		if m == imp || strings.HasSuffix(m, "/*") && strings.HasPrefix(imp, strings.TrimSuffix(m, "*")) {
			return true
		}
	}
	return false
}

// docs/packages.md names every package and what it may import: a package
// missing from it, or an import its row does not allow, fails.
func TestThePackageMapIsTrue(t *testing.T) {
	all := packages(t)
	root := all[module+"/lab"].Dir
	rows := packageMap(t, filepath.Dir(root))
	var missing, bad []string
	for path, p := range all {
		rel := strings.TrimPrefix(path, module+"/")
		may, ok := rows[rel]
		if !ok {
			missing = append(missing, rel)
			continue
		}
		for _, imp := range p.Imports {
			if _, ours := all[imp]; !ours {
				continue
			}
			if r := strings.TrimPrefix(imp, module+"/"); !allows(may, r) {
				bad = append(bad, rel+" imports "+r)
			}
		}
	}
	for rel := range rows {
		if _, ok := all[module+"/"+rel]; !ok {
			missing = append(missing, rel+" (in the map, not in the module)")
		}
	}
	sort.Strings(missing)
	sort.Strings(bad)
	assert.Empty(t, missing, "docs/packages.md and the module's packages differ")
	assert.Empty(t, bad, "imports docs/packages.md does not allow")
}

// The map's rule refuses what it should.
func TestThePackageMapRuleRefuses(t *testing.T) {
	may := []string{"lab/plan", "internal/*"}
	assert.True(t, allows(may, "lab/plan"))
	assert.True(t, allows(may, "internal/docker/fake"))
	assert.False(t, allows(may, "lab/plans"))
	assert.False(t, allows(may, "lab/state"))
	assert.False(t, allows(nil, "internal/gpu"))
}

// A file naming three or more of the lab's services enumerates them, which
// the service table (lab/service) does for everyone.
var serviceConst = regexp.MustCompile(`\bservice\.(?:Role(Head|MinIO|Prometheus|Grafana|Jupyter)|(Head|MinIO|Prometheus|Grafana|Jupyter)Service)\b`)

// Outside the service table, only the renderer's per-role extras name three
// or more services.
func TestOnlyTheServiceTableEnumeratesServices(t *testing.T) {
	allowed := map[string]bool{"lab/render/services.go": true}
	var bad []string
	for _, p := range packages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		if rel == "lab/service" {
			continue
		}
		for _, f := range p.GoFiles {
			b, err := os.ReadFile(filepath.Join(p.Dir, f))
			require.NoError(t, err)
			seen := map[string]bool{}
			for _, m := range serviceConst.FindAllStringSubmatch(string(b), -1) {
				seen[m[1]+m[2]] = true
			}
			if len(seen) >= 3 && !allowed[rel+"/"+f] {
				bad = append(bad, rel+"/"+f)
			}
		}
	}
	assert.Empty(t, bad, "these files enumerate the lab's services: read lab/service.All instead")
}
