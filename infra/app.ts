import { exampleApp } from "./example-stack.ts";

/** `cdk synth` / `cdk deploy` entry point (`cdk.json`): the example stack, checked by cdk-nag. */
exampleApp().synth();
