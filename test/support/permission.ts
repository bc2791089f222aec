/** Node's permission-model flag: `--permission` where Node knows it (22.13 and later), else the experimental one (Node 24 refuses that). */
export const PERMISSION_FLAG = process.allowedNodeEnvironmentFlags.has("--permission") ? "--permission" : "--experimental-permission";
