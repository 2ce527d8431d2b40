/** Files in and out of a sandbox: each call's fresh work area, and the tar streams both ways. */
export { archiveOf } from './archive';
export { collectFiles } from './transfer';
export { layOutWorkArea, putRunFiles } from './workArea';
export { imageTrustStore, trustEntries } from './trustStore';
