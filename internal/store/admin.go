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

// BucketActions and ObjectActions are all the lab user may do, on bucket
// and on its objects: what Ray Train and Tune's storage (pyarrow's
// S3FileSystem) and the notebooks call, read in docs/ray-fidelity.md.
// Nothing that configures the bucket (policy, ACL, lifecycle, versioning,
// replication, encryption, tagging, notifications) and no bucket creation
// or deletion: with s3:* the keys every notebook holds could make the bucket
// public, and Ray unpickles the checkpoints it loads from there.
var (
	BucketActions = []string{"s3:GetBucketLocation", "s3:ListBucket", "s3:ListBucketMultipartUploads"}
	ObjectActions = []string{"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload"}
)

// BucketPolicy is the lab user's IAM policy: BucketActions on bucket and
// ObjectActions on its objects, and nothing else: no other bucket, no
// bucket configuration, no admin.
func BucketPolicy(bucket string) []byte {
	arn := "arn:aws:s3:::" + bucket
	p := map[string]any{
		"Version": "2012-10-17",
		"Statement": []map[string]any{
			{"Effect": "Allow", "Action": BucketActions, "Resource": []string{arn}},
			{"Effect": "Allow", "Action": ObjectActions, "Resource": []string{arn + "/*"}},
		},
	}
	b, _ := json.Marshal(p) // a map of strings always encodes
	return b
}

// BucketPolicyName is the name of BucketPolicy(bucket) in MinIO.
func BucketPolicyName(bucket string) string { return "mltrain-bucket-" + bucket }

// codeAlreadyApplied is MinIO's answer to attaching a policy a user has.
const codeAlreadyApplied = "XMinioAdminPolicyChangeAlreadyApplied"

// UserChange is what EnsureBucketUser did, in words a progress line can show:
// never an error's text (a read that fails is only a reason to write; the
// writes report their own errors).
type UserChange struct {
	Created bool     // the user did not exist
	Reset   []string // on an existing user: what was set again ("secret reset", ...)
}

// Changed says whether anything was written.
func (c UserChange) Changed() bool { return c.Created || len(c.Reset) > 0 }

// String is "created", "updated (what)" or "unchanged".
func (c UserChange) String() string {
	switch {
	case c.Created:
		return "created"
	case len(c.Reset) > 0:
		return "updated (" + strings.Join(c.Reset, ", ") + ")"
	}
	return "unchanged"
}

// EnsureBucketUser makes user accessKey (with secretKey) exist, enabled,
// with BucketPolicy(bucket) as its only policy, and says what it changed.
// What is in place is read first: the writes encrypt
// their bodies with the root secret (argon2, about a second each on a busy
// host), and a re-up usually finds the user as it left it. Every write
// replaces or accepts what is there, so a re-run (an interrupted up, a
// changed secret, a policy someone attached) converges.
func (a *Admin) EnsureBucketUser(ctx context.Context, bucket, accessKey, secretKey string) (UserChange, error) {
	name := BucketPolicyName(bucket)
	change := a.differs(ctx, bucket, accessKey, secretKey)
	if !change.Changed() {
		return change, nil
	}
	if err := a.adm.AddCannedPolicy(ctx, name, BucketPolicy(bucket)); err != nil {
		return UserChange{}, a.wrap("create policy "+name, err)
	}
	if err := a.adm.AddUser(ctx, accessKey, secretKey); err != nil {
		return UserChange{}, a.wrap("create user "+accessKey, err)
	}
	_, err := a.adm.AttachPolicy(ctx, madmin.PolicyAssociationReq{Policies: []string{name}, User: accessKey})
	if err != nil && madmin.ToErrorResponse(err).Code != codeAlreadyApplied {
		return UserChange{}, a.wrap(fmt.Sprintf("attach policy %s to user %s", name, accessKey), err)
	}
	u, err := a.adm.GetUserInfo(ctx, accessKey)
	if err != nil {
		return UserChange{}, a.wrap("read user "+accessKey, err)
	}
	var others []string
	for _, p := range policyNames(u.PolicyName) {
		if p != name {
			others = append(others, p)
		}
	}
	if len(others) > 0 { // it would not be limited to the bucket
		if _, err := a.adm.DetachPolicy(ctx, madmin.PolicyAssociationReq{Policies: others, User: accessKey}); err != nil {
			return UserChange{}, a.wrap(fmt.Sprintf("detach %s from user %s", strings.Join(others, ", "), accessKey), err)
		}
	}
	return change, nil
}

// codeNoSuchUser is MinIO's answer to reading a user that does not exist.
const codeNoSuchUser = "XMinioAdminNoSuchUser"

// differs says what is not as EnsureBucketUser leaves it (nothing when all
// is): the policy and what it says, the user (enabled, exactly that policy),
// and secretKey being its secret (only an S3 call signed with it can tell).
func (a *Admin) differs(ctx context.Context, bucket, accessKey, secretKey string) UserChange {
	var c UserChange
	name := BucketPolicyName(bucket)
	p, err := a.adm.InfoCannedPolicyV2(ctx, name)
	switch {
	case err != nil:
		c.Reset = append(c.Reset, "policy "+name+" written")
	case !samePolicy(p.Policy, BucketPolicy(bucket)):
		c.Reset = append(c.Reset, "policy "+name+" rewritten: object actions on bucket "+bucket+" only")
	}
	u, err := a.adm.GetUserInfo(ctx, accessKey)
	switch {
	case err != nil && madmin.ToErrorResponse(err).Code == codeNoSuchUser:
		return UserChange{Created: true}
	case err != nil:
		return UserChange{Reset: append(c.Reset, "user written")}
	case u.Status != madmin.AccountEnabled:
		c.Reset = append(c.Reset, "user enabled")
	}
	if !slices.Equal(policyNames(u.PolicyName), []string{name}) {
		c.Reset = append(c.Reset, "user limited to policy "+name)
	}
	if len(c.Reset) > 0 { // written anyway; the secret is set with it
		return c
	}
	cfg := a.cfg
	cfg.AccessKey, cfg.SecretKey = accessKey, secretKey
	s, err := New(cfg)
	if err == nil {
		var ok bool
		ok, err = s.mc.BucketExists(ctx, bucket)
		if err == nil && !ok {
			err = errors.New("bucket not listed")
		}
	}
	if err != nil { // the lab secret does not list the bucket
		c.Reset = append(c.Reset, "secret reset")
	}
	return c
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
