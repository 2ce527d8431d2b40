/**
 * How python3 starts our own programs beside the runner (the lock holder, which runs as root, the
 * killer, the OOM count): isolated (-I: no PYTHON* variables of the image, no user site, neither
 * the current nor the script's folder on the path) and without `site` (-S: no site-packages, whose
 * .pth files run code at start). They need only the standard library, and start faster so.
 */
export const GUEST_PYTHON_FLAGS = ['-I', '-S'] as const;
