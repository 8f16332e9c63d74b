package main

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"os"
	"sync"
	"time"
)

// Prometheus as the lab runs it: it watches Ray's service-discovery file
// (file_sd, told of changes at once) and scrapes every target each
// scrape interval (10 s in the lab's prometheus.yml), the first time at an
// offset within the interval that Prometheus derives from the target. Until
// that first scrape the target's health is "unknown".

const scrapeInterval = 10 * time.Second

type sdGroup struct {
	Labels  map[string]string `json:"labels"`
	Targets []string          `json:"targets"`
}

var (
	discoveredMu sync.Mutex
	discovered   = map[string]time.Time{} // target -> when the file first listed it
	sdGroups     []sdGroup
)

// watchServiceDiscovery reads the file as Prometheus's file_sd does.
func watchServiceDiscovery() {
	for {
		var groups []sdGroup
		if b, err := os.ReadFile(rayTmp + "/prom_metrics_service_discovery.json"); err == nil {
			_ = json.Unmarshal(b, &groups)
		}
		now := time.Now()
		discoveredMu.Lock()
		sdGroups = groups
		for _, g := range groups {
			for _, t := range g.Targets {
				if _, ok := discovered[t]; !ok {
					discovered[t] = now
				}
			}
		}
		discoveredMu.Unlock()
		time.Sleep(200 * time.Millisecond)
	}
}

// scrapedYet says whether Prometheus has scraped target once.
func scrapedYet(target string) bool {
	discoveredMu.Lock()
	at, ok := discovered[target]
	discoveredMu.Unlock()
	h := fnv.New32a()
	_, _ = h.Write([]byte(target))
	offset := time.Duration(h.Sum32()%uint32(scrapeInterval/time.Millisecond)) * time.Millisecond
	return ok && time.Since(at) >= offset
}

// promTargets answers /api/v1/targets: the targets the file lists, each
// "unknown" until its first scrape, then up or down by scraping it now.
func promTargets(w http.ResponseWriter, r *http.Request) {
	discoveredMu.Lock()
	groups := sdGroups
	discoveredMu.Unlock()
	active := []any{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, g := range groups {
		for _, t := range g.Targets {
			wg.Add(1)
			go func(job, t string) {
				defer wg.Done()
				url := "http://" + t + "/metrics"
				health, lastErr := "unknown", ""
				if scrapedYet(t) {
					health = "up"
					if err := probe(url); err != nil {
						health, lastErr = "down", err.Error()
					}
				}
				mu.Lock()
				active = append(active, map[string]any{"labels": map[string]string{"job": job, "instance": t},
					"scrapePool": job, "scrapeUrl": url, "health": health, "lastError": lastErr})
				mu.Unlock()
			}(g.Labels["job"], t)
		}
	}
	wg.Wait()
	writeAny(w, map[string]any{"status": "success", "data": map[string]any{"activeTargets": active}})
}
