package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/minio/madmin-go/v3"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Admin is MinIO's admin API as its root user: the users and policies that
// S3 itself has no calls for.
type Admin struct {
	adm      *madmin.AdminClient
	cfg      Config
	endpoint string
}

// NewAdmin checks the configuration (root credentials) and returns an admin
// client; it does not connect.
func NewAdmin(cfg Config) (*Admin, error) {
	if cfg.Endpoint == "" || cfg.AccessKey == "" || cfg.SecretKey == "" {
		return nil, ErrNoAdmin
	}
	host, secure, err := hostOf(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	adm, err := madmin.NewWithOptions(host, &madmin.Options{
		Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""), Secure: secure, Transport: cfg.Transport,
	})
	if err != nil {
		return nil, fmt.Errorf("MinIO admin client for %s: %w", cfg.Endpoint, err)
	}
	return &Admin{adm: adm, cfg: cfg, endpoint: cfg.Endpoint}, nil
}

// BucketPolicy is an IAM policy allowing every S3 action on bucket and its
// objects, and nothing else: no other bucket, no bucket creation, no admin.
func BucketPolicy(bucket string) []byte {
	p := map[string]any{
		"Version": "2012-10-17",
		"Statement": []map[string]any{{
			"Effect":   "Allow",
			"Action":   []string{"s3:*"},
			"Resource": []string{"arn:aws:s3:::" + bucket, "arn:aws:s3:::" + bucket + "/*"},
		}},
	}
	b, _ := json.Marshal(p) // a map of strings always encodes
	return b
}

// BucketPolicyName is the name of BucketPolicy(bucket) in MinIO.
func BucketPolicyName(bucket string) string { return "mltrain-bucket-" + bucket }

// codeAlreadyApplied is MinIO's answer to attaching a policy a user has.
const codeAlreadyApplied = "XMinioAdminPolicyChangeAlreadyApplied"

// EnsureBucketUser makes user accessKey (with secretKey) exist, enabled,
// with BucketPolicy(bucket) as its only policy; it says what it found to
// change ("" when everything was in place). What is in place is read first: the writes encrypt
// their bodies with the root secret (argon2, about a second each on a busy
// host), and a re-up usually finds the user as it left it. Every write
// replaces or accepts what is there, so a re-run (an interrupted up, a
// changed secret, a policy someone attached) converges.
func (a *Admin) EnsureBucketUser(ctx context.Context, bucket, accessKey, secretKey string) (changed string, err error) {
	name := BucketPolicyName(bucket)
	changed = a.differs(ctx, bucket, accessKey, secretKey)
	if changed == "" {
		return "", nil
	}
	if err := a.adm.AddCannedPolicy(ctx, name, BucketPolicy(bucket)); err != nil {
		return "", a.wrap("create policy "+name, err)
	}
	if err := a.adm.AddUser(ctx, accessKey, secretKey); err != nil {
		return "", a.wrap("create user "+accessKey, err)
	}
	_, err = a.adm.AttachPolicy(ctx, madmin.PolicyAssociationReq{Policies: []string{name}, User: accessKey})
	if err != nil && madmin.ToErrorResponse(err).Code != codeAlreadyApplied {
		return "", a.wrap(fmt.Sprintf("attach policy %s to user %s", name, accessKey), err)
	}
	u, err := a.adm.GetUserInfo(ctx, accessKey)
	if err != nil {
		return "", a.wrap("read user "+accessKey, err)
	}
	var others []string
	for _, p := range policyNames(u.PolicyName) {
		if p != name {
			others = append(others, p)
		}
	}
	if len(others) > 0 { // it would not be limited to the bucket
		if _, err := a.adm.DetachPolicy(ctx, madmin.PolicyAssociationReq{Policies: others, User: accessKey}); err != nil {
			return "", a.wrap(fmt.Sprintf("detach %s from user %s", strings.Join(others, ", "), accessKey), err)
		}
	}
	return changed, nil
}

// differs says what is not as EnsureBucketUser leaves it ("" when all
// is): the policy and what it says, the user (enabled, exactly that policy),
// and secretKey being its secret (only an S3 call signed with it can tell).
func (a *Admin) differs(ctx context.Context, bucket, accessKey, secretKey string) string {
	name := BucketPolicyName(bucket)
	p, err := a.adm.InfoCannedPolicyV2(ctx, name)
	switch {
	case err != nil:
		return "policy " + name + ": " + err.Error()
	case !samePolicy(p.Policy, BucketPolicy(bucket)):
		return "policy " + name + " allows more or other than bucket " + bucket
	}
	u, err := a.adm.GetUserInfo(ctx, accessKey)
	switch {
	case err != nil:
		return "user: " + err.Error()
	case u.Status != madmin.AccountEnabled:
		return "user is " + string(u.Status)
	case !slices.Equal(policyNames(u.PolicyName), []string{name}):
		return fmt.Sprintf("user has policies %q", u.PolicyName)
	}
	c := a.cfg
	c.AccessKey, c.SecretKey = accessKey, secretKey
	s, err := New(c)
	if err != nil {
		return err.Error()
	}
	if ok, err := s.mc.BucketExists(ctx, bucket); err != nil || !ok {
		return fmt.Sprintf("the lab secret does not list bucket %s (%v)", bucket, err)
	}
	return ""
}

// policyNames splits MinIO's comma-separated policy list.
func policyNames(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// samePolicy compares two policy documents by meaning: MinIO re-indents
// what it stores, and keeps a statement's actions and resources as sets,
// so it hands them back in any order.
func samePolicy(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(unordered(x), unordered(y))
}

// unordered is v with every array sorted (by its elements' JSON).
func unordered(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = unordered(e)
		}
	case []any:
		for i, e := range t {
			t[i] = unordered(e)
		}
		slices.SortFunc(t, func(a, b any) int {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			return strings.Compare(string(ja), string(jb))
		})
	}
	return v
}

func (a *Admin) wrap(what string, err error) error {
	var er madmin.ErrorResponse
	answered := errors.As(err, &er)
	return describe(what, a.endpoint, err, answered, er.Code, "root credentials", ErrRootRefused)
}
