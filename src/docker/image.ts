/** Pulling lives with the other image concerns in ./images; this path stays for its importers. */
export { ensureImage, imagePresent, type PullProgress } from './images/pull';
