// placeholder: filled by the walk kernel
export function walk_placeholder(): i32 { return 0; }
