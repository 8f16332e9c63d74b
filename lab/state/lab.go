package state

// Lab is which lab a command acts on, as the user named it: its Compose
// project (--project) and its state directory (--state-dir; "" for the
// project's default). It is the lab's identity, one value passed down from
// the command layer.
type Lab struct {
	Project  string
	StateDir string
}

// Dir is the lab's state directory.
func (l Lab) Dir() Dir {
	if l.StateDir != "" {
		return Dir(l.StateDir)
	}
	return DefaultDir(l.Project)
}
