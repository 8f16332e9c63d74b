// Package host gathers the facts about this machine that the lab is planned
// from: GPUs, CPUs, memory, disk, groups, and the address browsers will use.
package host

import "github.com/mltrain/mltrain/internal/gpu"

// Facts is the input of the lab plan. It is plain data so that
// `mltrain render` can build it from flags and a `gpus --json` file for a host
// you are not on.
type Facts struct {
	GPUs        gpu.Report `json:"gpus"`
	CPUs        int        `json:"cpus"`
	MemoryBytes int64      `json:"memory_bytes"`
	// HostIP is the address students' browsers use to reach the lab.
	HostIP string `json:"host_ip"`
	// HostIPSource says where HostIP came from: flag, metadata, default-route,
	// or loopback (nothing better was found; browsers elsewhere cannot use it).
	HostIPSource string `json:"host_ip_source,omitempty"`
	// RenderGID and VideoGID are the host's numeric groups owning
	// /dev/dri/renderD* and /dev/kfd (AMD containers get them via group_add).
	RenderGID int `json:"render_gid,omitempty"`
	VideoGID  int `json:"video_gid,omitempty"`
	// NodeIP is the address other hosts reach this one at, for Ray nodes
	// that span hosts: --node-ip, else the default-route interface's own
	// address (a cloud's public IP is often NAT'd and not on any interface,
	// so Ray could not bind it). "" when none was found.
	NodeIP string `json:"node_ip,omitempty"`
}
