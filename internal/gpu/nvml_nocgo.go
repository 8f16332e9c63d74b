//go:build !cgo

package gpu

// systemNVML without cgo: go-nvml needs cgo to dlopen the library, so this
// build reports that instead (a problem row, never a crash).
func systemNVML() NVML { return noNVML{} }

type noNVML struct{}

func (noNVML) Init() error                    { return ErrNVMLNotBuilt }
func (noNVML) Shutdown()                      {}
func (noNVML) DeviceCount() (int, error)      { return 0, ErrNVMLNotBuilt }
func (noNVML) Device(int) (NVMLDevice, error) { return NVMLDevice{}, ErrNVMLNotBuilt }
func (noNVML) Driver() NVMLDriver             { return NVMLDriver{} }
