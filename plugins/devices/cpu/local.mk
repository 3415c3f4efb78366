# plugins/devices/cpu: build rules (filled in by its owner)
