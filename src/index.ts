/**
 * tool-artifacts: durable handles for the references an agent's tools produce.
 * The public contract (DESIGN §12); everything else is internal.
 */
