// placeholder: filled by the scan kernel
export function scan_placeholder(): i32 { return 0; }
