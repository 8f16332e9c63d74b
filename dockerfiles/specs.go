package dockerfiles

import (
	"github.com/mltrain/mltrain/internal/images"
)

// Spec is the build of one of the embedded images; its Ref equals
// Ref(k, rayVersion).
func Spec(k Kind, rayVersion string) (images.Spec, error) {
	df, err := Dockerfile(k)
	if err != nil {
		return images.Spec{}, err
	}
	ref, err := Ref(k, rayVersion)
	if err != nil {
		return images.Spec{}, err
	}
	role := images.RoleWorker
	if k == JupyterRay {
		role = images.RoleJupyter
	}
	return images.Spec{Kind: string(k), RayVersion: rayVersion, Dockerfile: df, BuildArgs: BuildArgs(k, rayVersion),
		Hash: images.HashOf(string(k), rayVersion, df), Ref: ref, Role: role}, nil
}

// WorkerKind is the worker image a host with GPUs of vendor (gpu.Vendor:
// "nvidia", "amd", or "" for none) needs. With no GPU (CPU rehearsal) it is
// the CUDA image: its PyTorch runs on CPU, it is several times smaller than
// the ROCm image, and a rehearsal then runs the very image an NVIDIA lab runs.
func WorkerKind(vendor string) Kind {
	if vendor == "amd" {
		return RayROCm
	}
	return RayCUDA
}

// Specs are the builds a host with GPUs of vendor needs: its worker image
// and the Jupyter image.
func Specs(vendor string, rayVersion string) ([]images.Spec, error) {
	var out []images.Spec
	for _, k := range []Kind{WorkerKind(vendor), JupyterRay} {
		s, err := Spec(k, rayVersion)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Request sorts the images a plan uses into what to build and what to pull:
// a ref equal to Ref(kind, rayVersion) of an embedded image is built, any
// other is pulled (and must be pinned). Duplicates are dropped. This is the
// call 'mltrain up' makes with its plan's images.
func Request(rayVersion string, refs []string) (images.Request, error) {
	built := map[string]Kind{}
	for _, k := range Kinds {
		ref, err := Ref(k, rayVersion)
		if err != nil {
			return images.Request{}, err
		}
		built[ref] = k
	}
	var req images.Request
	for _, ref := range images.Dedupe(refs) {
		k, ok := built[ref]
		if !ok {
			req.Pull = append(req.Pull, ref)
			continue
		}
		s, err := Spec(k, rayVersion)
		if err != nil {
			return images.Request{}, err
		}
		req.Build = append(req.Build, s)
	}
	return req, nil
}

// SaveRefs are the images a lab of rayVersion can use: every image mltrain
// builds (all vendors), their base images, the Ray image for the head, plus
// extra (the plan's external images). `mltrain images save` keeps those
// present.
func SaveRefs(rayVersion string, extra []string) ([]string, error) {
	refs := []string{RayImage(rayVersion)}
	for _, k := range Kinds {
		s, err := Spec(k, rayVersion)
		if err != nil {
			return nil, err
		}
		bases, err := images.Bases(s)
		if err != nil {
			return nil, err
		}
		refs = append(refs, s.Ref)
		refs = append(refs, bases...)
	}
	return images.Dedupe(append(refs, extra...)), nil
}
