package storetest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/minio/madmin-go/v3"
)

// User returns a user's secret and attached policies (ok false: no such user).
func (d *Server) User(accessKey string) (secret string, policies []string, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	u, ok := d.users[accessKey]
	if !ok {
		return "", nil, false
	}
	return u.secret, append([]string(nil), u.policies...), true
}

// PolicyBuckets returns the buckets policy name allows (ok false: no such policy).
func (d *Server) PolicyBuckets(name string) ([]string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.policies[name]
	return append([]string(nil), p.buckets...), ok
}

// AdminWrites counts the admin calls that created or changed something.
func (d *Server) AdminWrites() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.writes
}

// AddPolicy stores a canned policy directly, as `mc admin policy create`
// would (a lab made by an older mltrain).
func (d *Server) AddPolicy(name string, doc []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addPolicy(name, doc)
}

func (d *Server) addPolicy(name string, doc []byte) {
	gs, _ := statementsOf(doc)
	var buckets []string
	for _, g := range gs {
		for _, res := range g.resources {
			b := strings.TrimSuffix(strings.TrimPrefix(res, "arn:aws:s3:::"), "/*")
			if !slices.Contains(buckets, b) {
				buckets = append(buckets, b)
			}
		}
	}
	d.policies[name] = policy{raw: doc, buckets: buckets}
}

// AttachPolicy attaches a policy directly, as someone with mc would.
func (d *Server) AttachPolicy(user, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if u, ok := d.users[user]; ok {
		u.policies = append(u.policies, name)
	}
}

// admin answers madmin's calls as MinIO does: policies in plain JSON, user
// and attach requests encrypted with the root secret, attaching a policy a
// user already has refused with XMinioAdminPolicyChangeAlreadyApplied.
func (d *Server) admin(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		adminError(w, http.StatusBadRequest, "XMinioInvalidRequestBody", err.Error())
		return
	}
	decrypt := func(v any) bool {
		plain, err := madmin.DecryptData(SecretKey, bytes.NewReader(body))
		if err == nil {
			err = json.Unmarshal(plain, v)
		}
		if err != nil {
			adminError(w, http.StatusBadRequest, "XMinioAdminConfigBadJSON", err.Error())
			return false
		}
		return true
	}
	switch op := strings.TrimPrefix(r.URL.Path, "/minio/admin/v3/"); {
	case op == "info-canned-policy" && r.Method == http.MethodGet:
		name := r.URL.Query().Get("name")
		p, ok := d.policies[name]
		if !ok {
			adminError(w, http.StatusNotFound, "XMinioAdminNoSuchPolicy", "The canned policy does not exist.")
			return
		}
		// MinIO answers with the policy re-indented, not as it was given,
		// and a statement's actions and resources are sets there, handed
		// back in no set order: here, reversed.
		var v any
		_ = json.Unmarshal(p.raw, &v)
		pretty, _ := json.MarshalIndent(reverseArrays(v), "", " ")
		_ = json.NewEncoder(w).Encode(madmin.PolicyInfo{PolicyName: name, Policy: pretty})
	case op == "user-info" && r.Method == http.MethodGet:
		u, ok := d.user(w, r.URL.Query().Get("accessKey"))
		if !ok {
			return
		}
		_ = json.NewEncoder(w).Encode(madmin.UserInfo{PolicyName: strings.Join(u.policies, ","), Status: madmin.AccountEnabled})
	case op == "add-canned-policy" && r.Method == http.MethodPut:
		if _, ok := statementsOf(body); !ok {
			adminError(w, http.StatusBadRequest, "XMinioMalformedPolicy", "invalid policy")
			return
		}
		d.addPolicy(r.URL.Query().Get("name"), body)
		d.writes++
	case op == "add-user" && r.Method == http.MethodPut:
		var req madmin.AddOrUpdateUserReq
		if !decrypt(&req) {
			return
		}
		k := r.URL.Query().Get("accessKey")
		if k == d.key || len(k) < 3 || len(k) > 20 || len(req.SecretKey) < 8 || len(req.SecretKey) > 40 {
			adminError(w, http.StatusBadRequest, "XMinioAdminInvalidArgument", "invalid access or secret key")
			return
		}
		if u, ok := d.users[k]; ok {
			u.secret = req.SecretKey
		} else {
			d.users[k] = &user{secret: req.SecretKey}
		}
		d.writes++
	case (op == "idp/builtin/policy/attach" || op == "idp/builtin/policy/detach") && r.Method == http.MethodPost:
		var req madmin.PolicyAssociationReq
		if !decrypt(&req) {
			return
		}
		u, ok := d.user(w, req.User)
		if !ok {
			return
		}
		if strings.HasSuffix(op, "/detach") {
			u.policies = slices.DeleteFunc(u.policies, func(p string) bool { return slices.Contains(req.Policies, p) })
			d.writes++
			writeEncrypted(w, madmin.PolicyAssociationResp{PoliciesDetached: req.Policies, UpdatedAt: time.Now()})
			return
		}
		var added []string
		for _, p := range req.Policies {
			if _, ok := d.policies[p]; !ok {
				adminError(w, http.StatusNotFound, "XMinioAdminNoSuchPolicy", "The canned policy does not exist.")
				return
			}
			if !slices.Contains(u.policies, p) {
				added = append(added, p)
			}
		}
		if len(added) == 0 {
			adminError(w, http.StatusBadRequest, "XMinioAdminPolicyChangeAlreadyApplied", "The specified policy change is already in effect.")
			return
		}
		u.policies = append(u.policies, added...)
		d.writes++
		writeEncrypted(w, madmin.PolicyAssociationResp{PoliciesAttached: added, UpdatedAt: time.Now()})
	default:
		adminError(w, http.StatusBadRequest, "XMinioAdminUnsupported", "the double does not answer "+r.Method+" "+r.URL.Path)
	}
}

// writeEncrypted answers v as MinIO answers policy changes: JSON encrypted
// with the root secret.
func writeEncrypted(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	enc, err := madmin.EncryptData(SecretKey, b)
	if err != nil {
		adminError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	_, _ = w.Write(enc)
}

// reverseArrays reverses every array in a JSON value.
func reverseArrays(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = reverseArrays(e)
		}
	case []any:
		for i, e := range t {
			t[i] = reverseArrays(e)
		}
		slices.Reverse(t)
	}
	return v
}

// user finds a user as MinIO does, answering its "no such user" error when absent.
func (d *Server) user(w http.ResponseWriter, name string) (*user, bool) {
	u, ok := d.users[name]
	if !ok {
		adminError(w, http.StatusNotFound, "XMinioAdminNoSuchUser", "The specified user does not exist.")
	}
	return u, ok
}

func adminError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Code": code, "Message": msg})
}
