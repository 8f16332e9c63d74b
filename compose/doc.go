// Package compose is the generic engine layer under the lab: it loads a
// Compose project (compose.yaml merged with compose.override.yaml, exactly as
// `docker compose` would), applies it to the engine through the SDK
// (networks, volumes, containers with compose's labels and a config hash;
// unchanged containers left alone; depends_on order), converts services into
// engine requests, waits for health, and removes a project. It knows nothing
// of Ray or of the lab: the lab renders its plan into a project and hands it
// here.
package compose
