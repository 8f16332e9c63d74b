package backup

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/mltrain/mltrain/internal/clierr"
)

// S3Settings say where S3 is and with which keys: resolved from the
// environment by ResolveS3, or read from KEY=VALUE lines by ReadS3Env
// (what 'mltrain fleet backup' sends each host on its SSH session's stdin,
// so the keys are never in a command line).
type S3Settings struct {
	Endpoint     string // the service's URL; "" for AWS S3
	EndpointVar  string // the variable that named it, for errors
	AccessKey    string
	SecretKey    string
	SessionToken string
	Region       string
	From         string // where the keys came from, for errors
}

// S3EnvKeys are the variables S3Settings travel as, and all ReadS3Env takes.
var S3EnvKeys = []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION"}

// ResolveS3 reads the settings aws s3 reads: AWS_ENDPOINT_URL_S3 or
// AWS_ENDPOINT_URL (AWS's own endpoint when neither is set), AWS_REGION
// (or AWS_DEFAULT_REGION), and minio-go's chain of the AWS_* keys and
// ~/.aws/credentials (AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE).
func ResolveS3() (S3Settings, error) {
	var s S3Settings
	for _, v := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"} {
		if e := os.Getenv(v); e != "" {
			s.Endpoint, s.EndpointVar = e, v
			break
		}
	}
	s.Region = os.Getenv("AWS_REGION")
	if s.Region == "" {
		s.Region = os.Getenv("AWS_DEFAULT_REGION")
	}
	s.From = "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_ACCESS_KEY") == "" {
		file := os.Getenv("AWS_SHARED_CREDENTIALS_FILE")
		if file == "" {
			home, _ := os.UserHomeDir()
			file = filepath.Join(home, ".aws", "credentials")
		}
		profile := os.Getenv("AWS_PROFILE")
		if profile == "" {
			profile = "default"
		}
		s.From = fmt.Sprintf("profile %q of %s (AWS_PROFILE)", profile, file)
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}})
	v, err := creds.GetWithContext(nil)
	if err != nil || v.AccessKeyID == "" {
		return S3Settings{}, clierr.Hintf("export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_ENDPOINT_URL for MinIO or Ceph), or set AWS_PROFILE to a profile of ~/.aws/credentials",
			"no S3 credentials: AWS_ACCESS_KEY_ID is not set and %s has none", strings.TrimPrefix(s.From, "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"))
	}
	s.AccessKey, s.SecretKey, s.SessionToken = v.AccessKeyID, v.SecretAccessKey, v.SessionToken
	return s, nil
}

// Env is s as KEY=VALUE lines, for ReadS3Env on another host.
func (s S3Settings) Env() ([]byte, error) {
	var b strings.Builder
	for _, kv := range [][2]string{{s.EndpointVar, s.Endpoint}, {"AWS_ACCESS_KEY_ID", s.AccessKey}, {"AWS_SECRET_ACCESS_KEY", s.SecretKey},
		{"AWS_SESSION_TOKEN", s.SessionToken}, {"AWS_REGION", s.Region}} {
		if kv[0] == "" || kv[1] == "" {
			continue
		}
		if strings.ContainsAny(kv[1], "\r\n") {
			return nil, fmt.Errorf("%s holds a line break: it cannot be sent", kv[0])
		}
		b.WriteString(kv[0] + "=" + kv[1] + "\n")
	}
	return []byte(b.String()), nil
}

// ReadS3Env reads S3 settings as KEY=VALUE lines (blank lines ignored):
// only the keys of S3EnvKeys, each once; anything else is refused, naming
// the line but never echoing a value.
func ReadS3Env(r io.Reader) (S3Settings, error) {
	s := S3Settings{From: "the settings read from stdin (--s3-env-stdin)"}
	seen := map[string]bool{}
	sc := bufio.NewScanner(io.LimitReader(r, 64<<10))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		switch {
		case !ok:
			return S3Settings{}, fmt.Errorf("stdin line %d is not KEY=VALUE", n)
		case !slices.Contains(S3EnvKeys, k):
			return S3Settings{}, fmt.Errorf("stdin line %d sets %.40q: only %s are read", n, k, strings.Join(S3EnvKeys, ", "))
		case seen[k]:
			return S3Settings{}, fmt.Errorf("stdin line %d sets %s again", n, k)
		}
		seen[k] = true
		switch k {
		case "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL":
			if s.EndpointVar != "AWS_ENDPOINT_URL_S3" { // the S3 one wins, as in ResolveS3
				s.Endpoint, s.EndpointVar = v, k
			}
		case "AWS_ACCESS_KEY_ID":
			s.AccessKey = v
		case "AWS_SECRET_ACCESS_KEY":
			s.SecretKey = v
		case "AWS_SESSION_TOKEN":
			s.SessionToken = v
		case "AWS_REGION":
			s.Region = v
		}
	}
	if err := sc.Err(); err != nil {
		return S3Settings{}, fmt.Errorf("reading the S3 settings from stdin: %w", err)
	}
	if s.AccessKey == "" || s.SecretKey == "" {
		return S3Settings{}, fmt.Errorf("the S3 settings on stdin have no AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	return s, nil
}
