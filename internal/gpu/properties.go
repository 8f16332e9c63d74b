package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// Properties is a parsed KFD topology properties file: one "<name> <value>"
// pair per line, every value an unsigned decimal integer (the kernel prints
// them with %u / %llu).
type Properties map[string]uint64

// maxPropertiesSize bounds what ParseProperties accepts; a real file is < 2 KiB.
const maxPropertiesSize = 64 << 10

// ParseProperties parses a KFD properties file. Blank lines are ignored; any
// other line that is not "<name> <unsigned integer>" is an error naming the
// line, so a corrupt file is reported instead of half-read. Keys the kernel
// leaves out on older versions are simply absent.
func ParseProperties(data []byte) (Properties, error) {
	if len(data) > maxPropertiesSize {
		return nil, fmt.Errorf("properties: %d bytes, more than the %d a topology file can hold", len(data), maxPropertiesSize)
	}
	props := Properties{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("properties line %d: want \"<name> <integer>\", got %q", i+1, clip(line))
		}
		if !validKey(fields[0]) {
			return nil, fmt.Errorf("properties line %d: bad name %q", i+1, clip(fields[0]))
		}
		v, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("properties line %d: %s is not an unsigned integer: %q", i+1, fields[0], clip(fields[1]))
		}
		if _, dup := props[fields[0]]; dup {
			return nil, fmt.Errorf("properties line %d: %s appears twice", i+1, fields[0])
		}
		props[fields[0]] = v
	}
	if len(props) == 0 {
		return nil, fmt.Errorf("properties: empty")
	}
	return props, nil
}

// validKey accepts the kernel's names: lower-case letters, digits, underscores.
func validKey(k string) bool {
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return k != ""
}

// clip keeps error messages short when a file is garbage.
func clip(s string) string {
	const n = 40
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
