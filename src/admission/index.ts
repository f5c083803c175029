export { decideAdmission, INTERNAL_ERROR_WARNING } from './decide';
export type { AdmissionDecision, AdmissionOutcome, AdmissionResult, MutateFunction } from './decide';
export { parseAdmissionReview, podFrom, ADMISSION_API_VERSIONS } from './review';
export type { AdmissionRequest, AdmissionResponse, AdmissionReviewResponse, AdmissionApiVersion } from './review';
export { shapeWarnings, MAX_WARNING_CHARS, MAX_TOTAL_WARNING_CHARS } from './warnings';
