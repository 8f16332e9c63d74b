package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/mltrain/mltrain/internal/ray/raymodel"
)

// serveDashboard serves Ray's dashboard API from the model, and the health
// endpoints of Grafana and Prometheus the head reports on.
func serveDashboard(cmd string, c *raymodel.Cluster) {
	token := ""
	if os.Getenv("RAY_AUTH_MODE") == "token" {
		token = os.Getenv("RAY_AUTH_TOKEN")
	}
	api := raymodel.Handler(c, token)
	dash := http.NewServeMux()
	for _, p := range []string{"/api/version", "/api/jobs/", "/api/packages/", "/api/v0/nodes", "/api/v0/actors", "/api/actors/kill", "/api/cluster_status"} {
		dash.Handle(p, api)
	}
	guard := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if tokenOK(w, r) {
				h(w, r)
			}
		}
	}
	dash.HandleFunc("/api/grafana_health", guard(func(w http.ResponseWriter, r *http.Request) {
		host := os.Getenv("RAY_GRAFANA_HOST")
		if err := probe(host + "/api/health"); err != nil {
			writeAny(w, map[string]any{"result": false, "msg": "Grafana healthcheck failed: " + err.Error()})
			return
		}
		writeAny(w, map[string]any{"result": true, "msg": "Grafana running", "data": map[string]any{
			"grafanaHost": host, "sessionName": "session_standin", "dashboardUids": map[string]string{"default": dashboardUID}}})
	}))
	dash.HandleFunc("/api/prometheus_health", guard(func(w http.ResponseWriter, r *http.Request) {
		if err := probe(os.Getenv("RAY_PROMETHEUS_HOST") + "/-/healthy"); err != nil {
			writeAny(w, map[string]any{"result": false, "msg": "prometheus healthcheck failed: " + err.Error()})
			return
		}
		writeAny(w, map[string]any{"result": true, "msg": "prometheus running"})
	}))
	dash.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ray dashboard standin") })
	dport := flag(cmd, "dashboard-port")
	if dport == "" {
		dport = "8265"
	}
	go func() {
		if err := http.ListenAndServe(net.JoinHostPort(flag(cmd, "dashboard-host"), dport), dash); err != nil {
			fmt.Fprintln(os.Stderr, "standin head:", err)
			os.Exit(1)
		}
	}()
}

// s3 is checkpoint storage in the lab's MinIO, reached as Ray Train's
// pyarrow S3 filesystem reaches it: AWS_ENDPOINT_URL with the lab user's
// AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (the Ray nodes' environment).
type s3 struct{ mc *minio.Client }

func s3FromEnv() raymodel.Storage {
	u, err := url.Parse(os.Getenv("AWS_ENDPOINT_URL"))
	if err != nil || u.Host == "" {
		fmt.Fprintln(os.Stderr, "standin head: no AWS_ENDPOINT_URL: checkpoints go nowhere")
		return nil
	}
	mc, err := minio.New(u.Host, &minio.Options{Secure: u.Scheme == "https", Region: os.Getenv("AWS_DEFAULT_REGION"),
		Creds: credentials.NewStaticV4(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), "")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "standin head: S3:", err)
		return nil
	}
	return s3{mc: mc}
}

func (s s3) Put(bucket, key string, data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := s.mc.PutObject(ctx, bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{})
	if err != nil {
		return fmt.Errorf("put s3://%s/%s: %w", bucket, strings.TrimPrefix(key, "/"), err)
	}
	return nil
}

// Get reads a run's snapshot back, as Ray Train V2 does on a run's start.
func (s s3) Get(bucket, key string) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	obj, err := s.mc.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("get s3://%s/%s: %w", bucket, key, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("get s3://%s/%s: %w", bucket, key, err)
	}
	return b, true, nil
}

func (s s3) Delete(bucket, key string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.mc.RemoveObject(ctx, bucket, key, minio.RemoveObjectOptions{})
}
