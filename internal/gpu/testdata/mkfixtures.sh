#!/bin/bash
# Builds internal/gpu/testdata fixture trees (run once; the trees are committed).
set -e
T=$(cd "$(dirname "$0")" && pwd)
rm -rf $T/mi100x2 $T/mi100x1 $T/nvidia-nodriver $T/nvidia-driver $T/none $T/garbage $T/amd-nokfd
cpu_props() { cat <<P
cpu_cores_count 32
simd_count 0
mem_banks_count 1
caches_count 0
io_links_count 2
p2p_links_count 0
cpu_core_id_base $1
simd_id_base 0
max_waves_per_simd 0
lds_size_in_kb 0
gds_size_in_kb 0
num_gws 0
wave_front_size 0
array_count 0
simd_arrays_per_engine 0
cu_per_simd_array 0
simd_per_cu 0
max_slots_scratch_cu 0
gfx_target_version 0
vendor_id 0
device_id 0
location_id 0
domain 0
drm_render_minor 0
hive_id 0
num_sdma_engines 0
num_sdma_xgmi_engines 0
num_sdma_queues_per_engine 0
num_cp_queues 0
max_engine_clk_ccompute 3400
P
}
# gpu_props location_id render_minor unique_id
gpu_props() { cat <<P
cpu_cores_count 0
simd_count 480
mem_banks_count 1
caches_count 200
io_links_count 1
p2p_links_count 0
cpu_core_id_base 0
simd_id_base 2147488768
max_waves_per_simd 10
lds_size_in_kb 64
gds_size_in_kb 0
num_gws 64
wave_front_size 64
array_count 8
simd_arrays_per_engine 1
cu_per_simd_array 16
simd_per_cu 4
max_slots_scratch_cu 32
gfx_target_version 90008
vendor_id 4098
device_id 29580
location_id $1
domain 0
drm_render_minor $2
hive_id 0
num_sdma_engines 2
num_sdma_xgmi_engines 6
num_sdma_queues_per_engine 8
num_cp_queues 24
max_engine_clk_fcompute 1502
local_mem_size 0
fw_version 71
capability 746038912
debug_prop 1495
sdma_fw_version 20
unique_id $3
num_xcc 1
max_engine_clk_ccompute 3000
P
}
bank() { cat <<P
heap_type 1
size_in_bytes 34342961152
flags 0
width 4096
mem_clk_max 1200
P
}
cpu_node() { d=$1/sys/class/kfd/kfd/topology/nodes/$2; mkdir -p $d/mem_banks/0; echo 0 > $d/gpu_id; cpu_props $3 > $d/properties; }
gpu_node() { d=$1/sys/class/kfd/kfd/topology/nodes/$2; mkdir -p $d/mem_banks/0; echo $3 > $d/gpu_id; gpu_props $4 $5 $6 > $d/properties; bank > $d/mem_banks/0/properties; }
# pci root addr vendor class device driver
pci() { d=$1/sys/bus/pci/devices/$2; mkdir -p $d; echo $3 > $d/vendor; echo $4 > $d/class; echo $5 > $d/device; echo -1 > $d/numa_node
  if [ -n "$6" ]; then ln -s ../../../../bus/pci/drivers/$6 $d/driver; fi; }
board() { pci $1 0000:00:00.0 0x1022 0x060000 0x1480 ""; pci $1 0000:02:00.0 0x1a03 0x030000 0x2000 ast; }

R=$T/mi100x2   # two MI100s as nodes 2 and 10 (lexical order would swap them), two CPU nodes
cpu_node $R 0 0; cpu_node $R 1 32
gpu_node $R 2 51234 17152 128 4120847739465503241
gpu_node $R 10 40001 49920 129 1234567890123456789
board $R
pci $R 0000:43:00.0 0x1002 0x038000 0x738c amdgpu; pci $R 0000:43:00.1 0x1002 0x040300 0xab38 snd_hda_intel
pci $R 0000:c3:00.0 0x1002 0x038000 0x738c amdgpu
# AMD's amdgpu-dkms of ROCm 6.4 (package 1:6.12.12.60400) versions its module.
mkdir -p $R/sys/module/amdgpu; echo live > $R/sys/module/amdgpu/initstate; echo 6.12.12 > $R/sys/module/amdgpu/version

R=$T/mi100x1   # one MI100 whose board publishes product_name, on the kernel's in-tree amdgpu (no version file)
cpu_node $R 0 0
gpu_node $R 1 51234 17152 128 4120847739465503241
mkdir -p $R/sys/class/drm/renderD128/device; echo "Instinct MI100 (FRU)" > $R/sys/class/drm/renderD128/device/product_name
board $R; pci $R 0000:43:00.0 0x1002 0x038000 0x738c amdgpu
mkdir -p $R/sys/module/amdgpu; echo live > $R/sys/module/amdgpu/initstate

R=$T/nvidia-nodriver   # two A100s: one with no driver, one taken by vfio-pci
board $R; pci $R 0000:17:00.0 0x10de 0x030200 0x20b0 ""; pci $R 0000:65:00.0 0x10de 0x030200 0x20b0 vfio-pci

R=$T/nvidia-driver     # two A100s bound to nvidia (NVML decides the rest)
board $R; pci $R 0000:17:00.0 0x10de 0x030200 0x20b0 nvidia; pci $R 0000:65:00.0 0x10de 0x030200 0x20b0 nvidia

R=$T/none              # a server with no GPU: chipset and BMC VGA only
board $R

R=$T/garbage           # node 1's properties are not a properties file; node 2 is fine
cpu_node $R 0 0
gpu_node $R 1 51234 17152 128 4120847739465503241
printf 'this is not\x00 a topology file\nsimd_count lots\n' > $R/sys/class/kfd/kfd/topology/nodes/1/properties
gpu_node $R 2 40001 49920 129 1234567890123456789
board $R; pci $R 0000:43:00.0 0x1002 0x038000 0x738c amdgpu; pci $R 0000:c3:00.0 0x1002 0x038000 0x738c amdgpu

R=$T/amd-nokfd         # amdgpu bound (display only), no KFD
board $R; pci $R 0000:43:00.0 0x1002 0x038000 0x738c amdgpu
