// Pages with nothing of their own to load (the 404 page): the shared top bar only.
import { start } from "./shell.js";

start();
