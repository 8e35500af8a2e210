export { removeWorkerBundles as default } from './worker-bundles.mjs';
