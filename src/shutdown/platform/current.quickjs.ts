/** The platform inside the static executable: stands in for current.ts in its bundle. */
import { quickJsPlatform } from './quickjs';

export const platform = quickJsPlatform();
