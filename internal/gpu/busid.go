package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// NormalizeBusID turns a PCI address in any of the usual spellings
// (NVML's "00000000:17:00.0", sysfs's "0000:17:00.0", lspci's "17:00.0",
// upper or lower case) into the canonical "0000:17:00.0": lower-case hex,
// a 4-digit domain (wider only when the domain needs it).
func NormalizeBusID(s string) (string, error) {
	orig := s
	s = strings.TrimSpace(strings.ToLower(s))
	parts := strings.Split(s, ":")
	var dom, bus, devfn string
	switch len(parts) {
	case 2:
		dom, bus, devfn = "0", parts[0], parts[1]
	case 3:
		dom, bus, devfn = parts[0], parts[1], parts[2]
	default:
		return "", fmt.Errorf("PCI bus id %q: want [domain:]bus:device.function", orig)
	}
	dev, fn, ok := strings.Cut(devfn, ".")
	if !ok {
		return "", fmt.Errorf("PCI bus id %q: no .function", orig)
	}
	d, err1 := strconv.ParseUint(dom, 16, 32)
	b, err2 := strconv.ParseUint(bus, 16, 8)
	v, err3 := strconv.ParseUint(dev, 16, 5)
	f, err4 := strconv.ParseUint(fn, 16, 3)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || dom == "" || bus == "" || dev == "" || fn == "" {
		return "", fmt.Errorf("PCI bus id %q: not hexadecimal domain:bus:device.function", orig)
	}
	return formatBusID(d, b, v, f), nil
}

func formatBusID(domain, bus, dev, fn uint64) string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", domain, bus, dev, fn)
}
