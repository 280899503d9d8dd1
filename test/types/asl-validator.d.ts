// asl-validator ships no type declarations; this is the part of its API the tests use.
declare module "asl-validator" {
  interface ValidationResult {
    isValid: boolean;
    errors: Array<{ errorCode?: string; message?: string; path?: string }>;
  }
  export default function validator(definition: unknown): ValidationResult;
}
