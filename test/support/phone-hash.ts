// The tests' key of phone hashes (TETHER_PHONE_HASH_KEY of every relay and controller a test
// starts itself; the local stack keeps its own in its state folder: stack.phoneHash).
import { phoneHasher } from '../../common/session/phone-hash.ts';

export const TEST_PHONE_HASH_KEY = 'test-phone-hash-key-0123456789abcdef';
/** The phone hash under TEST_PHONE_HASH_KEY. */
export const testPhoneHash = phoneHasher(TEST_PHONE_HASH_KEY);
