package storetest

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
)

// grant is one Allow statement: its actions on its resources (ARNs, a
// trailing * a prefix), for the principals it names (bucket policies).
type grant struct {
	actions, resources []string
	anyone             bool // Principal "*": anonymous requests too
}

// statementsOf reads a policy's Allow statements; ok false when it is not
// a policy document.
func statementsOf(doc []byte) (gs []grant, ok bool) {
	var p struct {
		Statement []struct {
			Effect    string
			Principal any
			Action    stringList
			Resource  stringList
		}
	}
	if err := json.Unmarshal(doc, &p); err != nil || len(p.Statement) == 0 {
		return nil, false
	}
	for _, st := range p.Statement {
		if st.Effect != "Allow" {
			continue
		}
		b, _ := json.Marshal(st.Principal)
		gs = append(gs, grant{actions: st.Action, resources: st.Resource,
			anyone: string(b) == `"*"` || strings.Contains(string(b), `"AWS":"*"`) || strings.Contains(string(b), `"AWS":["*"]`)})
	}
	return gs, true
}

// stringList is a policy field that is one string or a list of them.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*l = []string{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(l))
}

// allows says whether g lets action act on resource, as MinIO matches
// them: "s3:*" every S3 action, a trailing * any suffix.
func (g grant) allows(action, resource string) bool {
	match := func(pats []string, s string) bool {
		return slices.ContainsFunc(pats, func(p string) bool {
			return p == "*" || p == s || strings.HasSuffix(p, "*") && strings.HasPrefix(s, strings.TrimSuffix(p, "*"))
		})
	}
	return match(g.actions, action) && match(g.resources, resource)
}

// request is what an S3 request asks, as MinIO's policy sees it.
type request struct {
	bucket, key string
	action      string // "" when the double does not answer it
	resource    string
}

// configActions are the bucket sub-resources the double answers: only the
// policy; the rest of a bucket's configuration is MinIO's to model.
var configActions = map[string]map[string]string{
	"policy": {http.MethodGet: "s3:GetBucketPolicy", http.MethodPut: "s3:PutBucketPolicy", http.MethodDelete: "s3:DeleteBucketPolicy"},
}

func parse(r *http.Request) request {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q := request{bucket: bucket, key: key, resource: "arn:aws:s3:::" + bucket}
	if key != "" {
		q.resource += "/" + key
		q.action = map[string]string{http.MethodHead: "s3:GetObject", http.MethodPut: "s3:PutObject", http.MethodDelete: "s3:DeleteObject"}[r.Method]
		return q
	}
	for sub, byMethod := range configActions {
		if r.URL.Query().Has(sub) {
			q.action = byMethod[r.Method]
			return q
		}
	}
	q.action = map[string]string{http.MethodHead: "s3:ListBucket", http.MethodGet: "s3:ListBucket", http.MethodPut: "s3:CreateBucket",
		http.MethodDelete: "s3:DeleteBucket"}[r.Method]
	return q
}

// userMay says whether u's attached policies allow q.
func (d *Server) userMay(u *user, q request) bool {
	for _, name := range u.policies {
		gs, _ := statementsOf(d.policies[name].raw)
		for _, g := range gs {
			if g.allows(q.action, q.resource) {
				return true
			}
		}
	}
	return false
}

// anyoneMay says whether q's bucket's own policy lets an unsigned request do q.
func (d *Server) anyoneMay(q request) bool {
	gs, _ := statementsOf(d.bucketPolicies[q.bucket])
	for _, g := range gs {
		if g.anyone && g.allows(q.action, q.resource) {
			return true
		}
	}
	return false
}

// servePolicy answers GET, PUT and DELETE of a bucket's own policy.
func (d *Server) servePolicy(w http.ResponseWriter, r *http.Request, bucket string) {
	switch r.Method {
	case http.MethodGet:
		p, ok := d.bucketPolicies[bucket]
		if !ok {
			s3Error(w, r, http.StatusNotFound, "NoSuchBucketPolicy", "The bucket policy does not exist")
			return
		}
		_, _ = w.Write(p)
	case http.MethodPut:
		body, _ := io.ReadAll(r.Body)
		if _, ok := statementsOf(body); !ok {
			s3Error(w, r, http.StatusBadRequest, "MalformedPolicy", "Policy has invalid resource.")
			return
		}
		d.bucketPolicies[bucket] = body
		w.WriteHeader(http.StatusNoContent)
	case http.MethodDelete:
		delete(d.bucketPolicies, bucket)
		w.WriteHeader(http.StatusNoContent)
	}
}

// SetBucketPolicy gives bucket its own policy directly, as someone with mc
// (`mc anonymous set download`) would.
func (d *Server) SetBucketPolicy(bucket, doc string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.bucketPolicies[bucket] = []byte(doc)
}

// BucketPolicy is bucket's own policy ("" when none).
func (d *Server) BucketPolicy(bucket string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return string(d.bucketPolicies[bucket])
}

// AnonymousReadPolicy is what `mc anonymous set download` gives bucket:
// anyone lists it and reads its objects.
func AnonymousReadPolicy(bucket string) string {
	return `{"Version":"2012-10-17","Statement":[` +
		`{"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetBucketLocation","s3:ListBucket"],"Resource":["arn:aws:s3:::` + bucket + `"]},` +
		`{"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::` + bucket + `/*"]}]}`
}
