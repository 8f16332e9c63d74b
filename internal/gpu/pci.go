package gpu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const pciDevices = "/sys/bus/pci/devices"

// PCI vendor ids of GPU makers mltrain supports. AMD's CPU and chipset
// functions use 0x1022 and BMC VGA chips (ASPEED 0x1a03) other ids, so
// neither is mistaken for a GPU.
const (
	pciVendorNVIDIA = 0x10de
	pciVendorAMD    = 0x1002
)

// PCIDevice is a GPU function seen on the PCI bus.
type PCIDevice struct {
	Address  string // canonical 0000:17:00.0
	Vendor   Vendor
	DeviceID uint64
	Class    uint64
	Driver   string // bound kernel driver, "" when none
}

// isGPUClass accepts VGA (0x0300), 3D (0x0302), other display (0x0380) and
// processing accelerator (0x1200, newer AMD Instinct) functions; this skips the
// HDMI audio (0x0403) next to a GPU.
func isGPUClass(class uint64) bool {
	switch class >> 8 {
	case 0x0300, 0x0302, 0x0380, 0x1200:
		return true
	}
	return false
}

// ScanPCI lists the NVIDIA and AMD GPU functions under root's PCI sysfs, by
// address. A missing PCI directory yields none (containers, some VMs);
// entries with unreadable or odd files are skipped, as they are not GPUs
// mltrain could use anyway.
func ScanPCI(root string) ([]PCIDevice, error) {
	dir := under(root, pciDevices)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("scan PCI devices in %s: %w", dir, err)
	}
	var out []PCIDevice
	for _, e := range entries {
		d := filepath.Join(dir, e.Name())
		vendor, err1 := readHex(filepath.Join(d, "vendor"))
		class, err2 := readHex(filepath.Join(d, "class"))
		if err1 != nil || err2 != nil || !isGPUClass(class) {
			continue
		}
		var v Vendor
		switch vendor {
		case pciVendorNVIDIA:
			v = NVIDIA
		case pciVendorAMD:
			v = AMD
		default:
			continue
		}
		addr, err := NormalizeBusID(e.Name())
		if err != nil {
			continue
		}
		dev, _ := readHex(filepath.Join(d, "device"))
		drv := ""
		if link, err := os.Readlink(filepath.Join(d, "driver")); err == nil {
			drv = filepath.Base(link)
		}
		out = append(out, PCIDevice{Address: addr, Vendor: v, DeviceID: dev, Class: class, Driver: drv})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, nil
}

// readHex reads a sysfs value such as "0x10de\n".
func readHex(file string) (uint64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	s := strings.TrimPrefix(strings.TrimSpace(string(b)), "0x")
	return strconv.ParseUint(s, 16, 32)
}
