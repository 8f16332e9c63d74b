package verify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/datasets/food11"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/internal/store/storetest"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/render"
	"github.com/mltrain/mltrain/lab/service"
)

// anyKeyStore accepts every credential: a MinIO still on its defaults.
type anyKeyStore struct{ s Store }

func (a anyKeyStore) ListCheckpoints(ctx context.Context, b, p string) ([]store.Checkpoint, error) {
	return a.s.ListCheckpoints(ctx, b, p)
}

func (a anyKeyStore) BucketPolicy(ctx context.Context, b string) (string, error) {
	return a.s.BucketPolicy(ctx, b)
}

// policyHidden is a store that finds no bucket policy: anonymous access
// the policy read misses must still fail the check.
type policyHidden struct{ Store }

func (policyHidden) BucketPolicy(context.Context, string) (string, error) { return "", nil }

// oldLabUserPolicy is what labs before issue 31 gave the lab user.
const oldLabUserPolicy = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::ray","arn:aws:s3:::ray/*"]}]}`

func TestMinIOChecks(t *testing.T) {
	runFailures(t, []failure{
		{name: "no bucket", id: "minio.bucket", break_: func(f *fixture) {
			empty := storetest.New(f.t) // a fresh double has no bucket
			f.deps.MinIO = func(a, s string) (Store, error) {
				return store.New(store.Config{Endpoint: empty.URL, AccessKey: a, SecretKey: s})
			}
		}, evidence: `has no bucket "ray"`, fix: "mltrain up"},
		{name: "wrong credentials", id: "minio.bucket", break_: func(f *fixture) {
			f.deps.Creds.MinIOAccessKey = "someone-else"
		}, evidence: "credentials refused (InvalidAccessKeyId)"},
		{name: "minio down", id: "minio.bucket", break_: func(f *fixture) {
			f.deps.State.Probes.MinIO = "http://127.0.0.1:1"
			f.deps.MinIO = func(a, s string) (Store, error) {
				return store.New(store.Config{Endpoint: "http://127.0.0.1:1", AccessKey: a, SecretKey: s})
			}
		}, evidence: "MinIO does not answer", fix: "mltrain logs minio"},
		{name: "minio down fails the credentials check fast too", id: "minio.credentials", break_: func(f *fixture) {
			f.deps.State.Probes.MinIO = "http://127.0.0.1:1"
		}, evidence: "connection refused", fix: "mltrain logs minio"},
		{name: "defaults accepted", id: "minio.credentials", break_: func(f *fixture) {
			good, err := f.deps.MinIO(f.deps.Creds.MinIOAccessKey, f.deps.Creds.MinIOSecretKey)
			require.NoError(t, err)
			f.deps.MinIO = func(string, string) (Store, error) { return anyKeyStore{good}, nil }
		}, evidence: "accepts the default credentials your-access-key/your-secret-key", fix: "compose.override.yaml"},
		{name: "container on minioadmin", id: "minio.credentials", break_: func(f *fixture) {
			f.eng.Containers["minio"].Env = []string{"MINIO_ROOT_USER=minioadmin", "MINIO_ROOT_PASSWORD=minioadmin"}
		}, evidence: `default MinIO root user "minioadmin"`},
		{name: "container on other key", id: "minio.credentials", break_: func(f *fixture) {
			f.eng.Containers["minio"].Env = []string{"MINIO_ROOT_USER=mine", "MINIO_ROOT_PASSWORD=longpassword"}
		}, evidence: `root user "mine", not the lab's generated key`},
		{name: "credentials file holds a default", id: "minio.credentials", break_: func(f *fixture) {
			f.deps.Creds.MinIOAccessKey = "your-access-key"
		}, evidence: "credentials file holds a default MinIO key", fix: "credentials.json"},
		{name: "jupyter holds the root key", id: "minio.lab-user", break_: func(f *fixture) {
			f.eng.Containers["jupyter"].Env = append(f.eng.Containers["jupyter"].Env, "AWS_SECRET_ACCESS_KEY="+storetest.SecretKey)
		}, evidence: "container jupyter holds MinIO's root credentials (AWS_SECRET_ACCESS_KEY)", fix: "compose.override.yaml"},
		{name: "a worker holds the root user", id: "minio.lab-user", break_: func(f *fixture) {
			f.eng.Containers["ray-worker-1"].Env = []string{"AWS_ACCESS_KEY_ID=" + storetest.AccessKey}
		}, evidence: "container ray-worker-1 holds MinIO's root credentials (AWS_ACCESS_KEY_ID)"},
		{name: "jupyter without the lab user", id: "minio.lab-user", break_: func(f *fixture) {
			f.eng.Containers["jupyter"].Env = []string{"AWS_ACCESS_KEY_ID=someone"}
		}, evidence: `has AWS_ACCESS_KEY_ID "someone", not the lab user "labuser"`, fix: "mltrain up"},
		{name: "lab user missing in MinIO", id: "minio.lab-user", break_: func(f *fixture) {
			f.deps.Creds.MinIOLabAccessKey = "nouser"
			f.eng.Containers["jupyter"].Env = []string{"AWS_ACCESS_KEY_ID=nouser"}
		}, evidence: "the lab user nouser cannot list bucket \"ray\"", fix: "mltrain up"},
		{name: "lab user unlimited", id: "minio.lab-user", break_: func(f *fixture) {
			f.deps.MinIO = func(a, s string) (Store, error) {
				return store.New(store.Config{Endpoint: f.s3.URL, AccessKey: storetest.AccessKey, SecretKey: s}) // as root: nothing refused
			}
		}, evidence: `reaches buckets outside "ray"`, fix: "mltrain up"},
		{name: "no lab user in the credentials file", id: "minio.lab-user", break_: func(f *fixture) {
			f.deps.Creds.MinIOLabAccessKey = ""
		}, evidence: "has no MinIO lab user", fix: "mltrain up"},
		{name: "lab user may configure the bucket", id: "minio.lab-user", break_: func(f *fixture) {
			f.s3.AddPolicy(store.BucketPolicyName("ray"), []byte(oldLabUserPolicy))
		}, evidence: `the lab user labuser may read bucket "ray"'s policy: its policy allows more than object actions`, fix: "mltrain up"},
		{name: "bucket open to anyone", id: "minio.private", break_: func(f *fixture) {
			f.s3.SetBucketPolicy("ray", storetest.AnonymousReadPolicy("ray"))
		}, evidence: `bucket "ray" has its own policy granting anyone s3:GetBucketLocation, s3:GetObject, s3:ListBucket`,
			fix: `mltrain up (it removes bucket "ray"'s policy`},
		{name: "bucket policy for someone", id: "minio.private", break_: func(f *fixture) {
			f.s3.SetBucketPolicy("ray", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam:::user/someone"]},"Action":["s3:PutObject"],"Resource":["arn:aws:s3:::ray/*"]}]}`)
		}, evidence: `bucket "ray" has its own policy: checkpoints Ray loads could come from outside the lab`, fix: "mc anonymous set none"},
		{name: "anonymous reads answered", id: "minio.private", break_: func(f *fixture) {
			f.s3.SetBucketPolicy("ray", storetest.AnonymousReadPolicy("ray"))
			open := f.deps.MinIO
			f.deps.MinIO = func(a, s string) (Store, error) {
				st, err := open(a, s)
				return policyHidden{st}, err
			}
		}, evidence: `lets anonymous requests list and read bucket "ray"`, fix: "mltrain up"},
		{name: "no bucket", id: "minio.private", break_: func(f *fixture) {
			empty := storetest.New(f.t)
			f.deps.State.Probes.MinIO = empty.URL
			f.deps.MinIO = func(a, s string) (Store, error) {
				return store.New(store.Config{Endpoint: empty.URL, AccessKey: a, SecretKey: s})
			}
		}, evidence: `has no bucket "ray"`, fix: "mltrain up (it creates the bucket)"},
		{name: "minio down", id: "minio.private", break_: func(f *fixture) {
			f.deps.State.Probes.MinIO = "http://127.0.0.1:1"
		}, evidence: "MinIO does not answer", fix: "mltrain logs minio"},
	})
}

func TestDataChecks(t *testing.T) {
	counts := canonicalCounts()
	runFailures(t, []failure{
		{name: "no volume", id: "data.food11", break_: func(f *fixture) {
			f.deps.Manifest = func(context.Context, string) (*food11.Manifest, error) {
				return nil, fmt.Errorf("dataset volume food11 does not exist: %w", docker.ErrNotFound)
			}
		}, evidence: "dataset volume food11 does not exist", fix: "mltrain data food11 --volume food11"},
		{name: "no manifest", id: "data.food11", break_: func(f *fixture) {
			f.deps.Manifest = func(context.Context, string) (*food11.Manifest, error) { return nil, nil }
		}, evidence: "has no manifest", fix: "mltrain data food11"},
		{name: "not the published dataset", id: "data.food11", break_: func(f *fixture) {
			c := food11.Counts{"training": {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}
			f.deps.Manifest = func(context.Context, string) (*food11.Manifest, error) {
				return &food11.Manifest{Counts: c, Files: 11}, nil
			}
		}, evidence: "training has 11 images; canonical Food-11 has 9,866", fix: "--force"},
		{name: "inconsistent manifest", id: "data.food11", break_: func(f *fixture) {
			f.deps.Manifest = func(context.Context, string) (*food11.Manifest, error) {
				return &food11.Manifest{Counts: counts, Files: 12}, nil
			}
		}, evidence: "12 files, but its counts add up to 16643"},
		{name: "engine error", id: "data.food11", break_: func(f *fixture) {
			f.deps.Manifest = func(context.Context, string) (*food11.Manifest, error) {
				return nil, errors.New("create helper container: engine says no")
			}
		}, evidence: "engine says no"},
	})
	t.Run("full count", func(t *testing.T) {
		f := newFixture(t)
		f.deps.DataVerify = func(context.Context, string) (food11.Report, error) {
			return food11.Report{Files: counts.Total(), Found: counts, OK: true}, nil
		}
		r := f.run(Options{DataFull: true, Only: []string{GroupData}})
		require.Len(t, r.Checks, 1)
		assert.Equal(t, Pass, r.Checks[0].Status, r.Checks[0].Evidence)
		assert.Contains(t, r.Checks[0].Evidence, "counted 16643 images")

		f.deps.DataVerify = func(context.Context, string) (food11.Report, error) {
			return food11.Report{}, clierr.Hintf("load it again with 'mltrain data food11 --force --volume food11'", "volume food11: counts differ from the manifest")
		}
		r = f.run(Options{DataFull: true, Only: []string{GroupData}})
		assert.Equal(t, Fail, r.Checks[0].Status)
		assert.Contains(t, r.Checks[0].Evidence, "counts differ from the manifest")
		assert.Contains(t, r.Checks[0].Fix, "--force")
	})
}

func TestMetricsChecks(t *testing.T) {
	runFailures(t, []failure{
		{name: "no ray targets", id: "metrics.prometheus", break_: func(f *fixture) { f.targets = nil },
			evidence: "no active target of job 'ray'", fix: "prom_metrics_service_discovery.json"},
		{name: "a node's target down", id: "metrics.prometheus", break_: func(f *fixture) {
			f.targets[1].Health, f.targets[1].LastError = "down", "connection refused"
		}, evidence: "no 'up' Ray target for alive node(s) " + w0IP},
		{name: "stale target of a dead node is fine", id: "metrics.prometheus", status: Pass, break_: func(f *fixture) {
			f.targets = append(f.targets, promTarget{Labels: map[string]string{"job": "ray"}, ScrapeURL: "http://172.18.0.9:8080/metrics", Health: "down"})
		}, evidence: "1 stale target(s)"},
		{name: "prometheus down", id: "metrics.prometheus", break_: func(f *fixture) {
			f.deps.State.Probes.Prometheus = "http://127.0.0.1:1"
		}, evidence: "connection refused", fix: "mltrain logs prometheus"},
		{name: "grafana database", id: "metrics.grafana", break_: func(f *fixture) { f.grafanaDB = "failing" },
			evidence: `database "failing"`, fix: "mltrain logs grafana"},
		{name: "no ray dashboards", id: "metrics.grafana", break_: func(f *fixture) {
			f.dashboards = []grafanaDash{{UID: "x", Title: "Mine", FolderTitle: "General"}}
		}, evidence: "no dashboard in folder 'Ray' (1 dashboards in all)"},
		{name: "provisioning file gone", id: "metrics.grafana", break_: func(f *fixture) {
			require.NoError(t, os.Remove(f.deps.StateDir.File(render.GrafanaDashboards)))
		}, evidence: "provisioning file", fix: "mltrain up"},
		{name: "ray cannot reach grafana", id: "metrics.ray", break_: func(f *fixture) {
			f.grafanaHealth = map[string]any{"result": false, "msg": "Grafana healthcheck failed: connection refused"}
		}, evidence: "Grafana healthcheck failed", fix: "RAY_GRAFANA_HOST"},
		{name: "grafana lacks ray's dashboard", id: "metrics.ray", break_: func(f *fixture) {
			f.dashboards = f.dashboards[1:]
		}, evidence: `no dashboard with uid "rayDefaultDashboard"`},
	})
}

// A node Prometheus has not scraped yet (just joined, a lab just up) is
// waited for, up to about a scrape interval, never judged down at once.
func TestPrometheusWaitsForTheFirstScrape(t *testing.T) {
	f := newFixture(t)
	f.targets[1].Health = "unknown"
	f.scrapeOnQuery = true
	c := find(t, f.run(Options{Only: []string{GroupMetrics}}), "metrics.prometheus")
	assert.Equal(t, Pass, c.Status, c.Evidence)

	f = newFixture(t) // waits 1.5 s
	f.targets[1].Health = "unknown"
	c = find(t, f.run(Options{Only: []string{GroupMetrics}}), "metrics.prometheus")
	assert.Equal(t, Fail, c.Status)
	assert.Contains(t, c.Evidence, "not scraped yet")

	// An alive node Ray's service-discovery file does not list yet.
	f = newFixture(t)
	listed := f.targets[:1]
	f.targets = listed
	start := time.Now()
	c = find(t, f.run(Options{Only: []string{GroupMetrics}}), "metrics.prometheus")
	assert.Equal(t, Fail, c.Status)
	assert.GreaterOrEqual(t, time.Since(start), time.Second, "waited for the file to list it")
}

func TestJupyterChecks(t *testing.T) {
	runFailures(t, []failure{
		{name: "api refuses", id: "jupyter.api", break_: func(f *fixture) { f.jupyterCode = 503 },
			evidence: "HTTP 503", fix: "mltrain logs jupyter"},
		{name: "no RAY_ADDRESS", id: "jupyter.ray-address", break_: func(f *fixture) {
			f.eng.Containers["jupyter"].Env = []string{"RAY_AUTH_TOKEN=" + token}
		}, evidence: "has no RAY_ADDRESS", fix: "compose.override.yaml"},
		{name: "RAY_ADDRESS elsewhere", id: "jupyter.ray-address", break_: func(f *fixture) {
			f.eng.Containers["jupyter"].Env = []string{"RAY_ADDRESS=http://10.0.0.1:8265", "RAY_AUTH_TOKEN=" + token}
		}, evidence: "not the lab's head"},
		{name: "ray client address", id: "jupyter.ray-address", break_: func(f *fixture) {
			f.eng.Containers["jupyter"].Env = []string{"RAY_ADDRESS=ray://ray-head:10001", "RAY_AUTH_TOKEN=" + token}
		}, evidence: "not a dashboard HTTP address"},
		{name: "no token", id: "jupyter.ray-address", break_: func(f *fixture) {
			f.eng.Containers["jupyter"].Env = []string{"RAY_ADDRESS=http://ray-head:8265"}
		}, evidence: "RAY_AUTH_TOKEN is not set"},
		{name: "no container", id: "jupyter.ray-address", break_: func(f *fixture) {
			delete(f.eng.Containers, "jupyter")
		}, evidence: "no jupyter container", fix: "mltrain up"},
	})
}

// On a lab that accepts joins, Ray's nodes are on the host network and
// Jupyter reaches the head's dashboard at the host's address and pinned
// port (plan.Plan.JupyterRayAddress); another port there, or ray-head (a name
// Jupyter cannot resolve to a host-network head), fails.
func TestJupyterRayAddressOnAHostNetworkLab(t *testing.T) {
	hostLab := func(f *fixture, addr string) {
		p := f.plan
		p.Network, p.NodeIP, p.Bind = plan.NetworkHost, "10.52.3.7", "0.0.0.0"
		p.Ports = map[string]int{service.PortDashboard: 8265, service.PortGCS: 6379}
		f.setPlan(p)
		f.eng.Containers["jupyter"].Env = []string{"RAY_ADDRESS=" + addr, "RAY_AUTH_TOKEN=" + token}
	}
	for addr, want := range map[string]Status{
		"http://10.52.3.7:8265": Pass,
		"http://10.52.3.7:8266": Fail,
		"http://10.52.3.8:8265": Fail,
		"http://ray-head:8265":  Fail,
	} {
		f := newFixture(t)
		hostLab(f, addr)
		c := find(t, f.run(Options{Only: []string{GroupJupyter}}), "jupyter.ray-address")
		assert.Equal(t, want, c.Status, "%s: %s", addr, c.Evidence)
		if want == Fail {
			assert.Contains(t, c.Evidence, "not the lab's head (http://10.52.3.7:8265)", addr)
		}
	}
}
